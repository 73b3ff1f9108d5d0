#!lua
-- streams: stream commands newer than the backend, and XREADGROUP … NOACK as Upstash runs it
-- (see docs/compatibility.md, "Emulated commands").
--
-- KEYS     the stream keys the command names (one for XDELEX/XACKDEL)
-- ARGV[1]  the lower-case command name: xdelex, xackdel or xreadgroup
-- ARGV[2..] the command's arguments after its name, keys included, as the client sent them
-- Returns  what Redis 8.2 returns for XDELEX/XACKDEL; XREADGROUP's own reply.
--@include arguments
local cmd = ARGV[1]
local args = {}
for i = 2, #ARGV do
  args[#args + 1] = ARGV[i]
end

local function failed(r)
  return type(r) == 'table' and r.err ~= nil
end

-- XREADGROUP GROUP g c … NOACK: entries are delivered without entering the PEL (Redis does
-- that too) and a consumer the call created is removed again, so it leaves no trace.
local function read_noack()
  local group, consumer = args[2], args[3]
  local existed = {}
  for i, key in ipairs(KEYS) do
    local info = redis.pcall('XINFO', 'CONSUMERS', key, group)
    existed[i] = true
    if not failed(info) then
      existed[i] = false
      for _, c in ipairs(info) do
        if c[2] == consumer then
          existed[i] = true
        end
      end
    end
  end
  local r = redis.pcall('XREADGROUP', unpack(args))
  if failed(r) then
    return r
  end
  for i, key in ipairs(KEYS) do
    if not existed[i] then
      redis.pcall('XGROUP', 'DELCONSUMER', key, group, consumer)
    end
  end
  return r
end

-- ms-seq IDs compared numerically: true when a > b.
local function id_after(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  if not am or not bm then
    return false
  end
  am, bm = tonumber(am), tonumber(bm)
  if am ~= bm then
    return am > bm
  end
  return tonumber(as) > tonumber(bs)
end

local function groups_of(key)
  local out = {}
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', key)) do
    local name, last
    for i = 1, #g, 2 do
      if g[i] == 'name' then
        name = g[i + 1]
      elseif g[i] == 'last-delivered-id' then
        last = g[i + 1]
      end
    end
    out[#out + 1] = { name = name, last = last }
  end
  return out
end

-- True when some group other than `except` has not yet acknowledged the entry.
local function still_referenced(key, id, except)
  for _, g in ipairs(groups_of(key)) do
    if g.name ~= except then
      if id_after(id, g.last) then
        return true
      end
      if #redis.call('XPENDING', key, g.name, id, id, 1) > 0 then
        return true
      end
    end
  end
  return false
end

local function drop_references(key, id)
  for _, g in ipairs(groups_of(key)) do
    redis.call('XACK', key, g.name, id)
  end
end

-- [KEEPREF | DELREF | ACKED] IDS numids id… from args[at]; returns policy, ids or nil, error.
local function policy_and_ids(at)
  local policy = 'KEEPREF'
  local word = string.upper(args[at] or '')
  if word == 'KEEPREF' or word == 'DELREF' or word == 'ACKED' then
    policy = word
    at = at + 1
  end
  local ids, e = counted_items(args, at, 'IDS', {
    missing = 'ERR syntax error',
    count = 'ERR Number of IDs must be a positive integer',
    mismatch = 'ERR The `numids` parameter must match the number of arguments',
  })
  if not ids then
    return nil, e
  end
  return policy, ids
end

local function exists_entry(key, id)
  local r = redis.pcall('XRANGE', key, id, id)
  if failed(r) then
    return nil, r
  end
  return #r > 0
end

-- Deletes one entry under the policy; 1 deleted, 2 kept because a group still references it.
local function delete_entry(key, id, policy, group)
  if policy == 'ACKED' and still_referenced(key, id, group) then
    return 2
  end
  redis.call('XDEL', key, id)
  if policy == 'DELREF' then
    drop_references(key, id)
  end
  return 1
end


-- The stream's existence, deletion policy and ids from args[at], or nil and an error reply.
local function stream_call(key, at)
  local exists = key_of_type(key, 'stream')
  if failed(exists) then
    return nil, exists
  end
  local policy, ids = policy_and_ids(at)
  if not policy then
    return nil, ids
  end
  return exists, policy, ids
end

local function delex()
  local key = KEYS[1]
  local exists, policy, ids = stream_call(key, 2)
  if exists == nil then
    return policy
  end
  local out = {}
  for i, id in ipairs(ids) do
    local found, e = false
    if exists then
      found, e = exists_entry(key, id)
      if e then
        return e
      end
    end
    out[i] = found and delete_entry(key, id, policy, nil) or -1
  end
  return out
end

-- The last id group `name` of the stream has delivered, or nil when there is no such group.
local function delivered_up_to(key, name)
  for _, g in ipairs(groups_of(key)) do
    if g.name == name then
      return g.last
    end
  end
  return nil
end

-- XACKDEL: an entry the group has delivered and already acknowledged (not pending any more) is
-- deleted like a pending one, as Upstash answers (upstash-redis-py's
-- test_xackdel_already_acknowledged; Redis 8.2 answers -1 and keeps it). An entry the group has
-- not delivered yet answers -1 and stays.
local function ackdel()
  local key, group = KEYS[1], args[2]
  local exists, policy, ids = stream_call(key, 3)
  if exists == nil then
    return policy
  end
  local last = exists and delivered_up_to(key, group) or nil
  local out = {}
  for i, id in ipairs(ids) do
    local acked = exists and redis.pcall('XACK', key, group, id) or 0
    if failed(acked) then
      return acked
    end
    local delivered = acked == 1 or (last ~= nil and not id_after(id, last))
    if delivered and exists_entry(key, id) then
      out[i] = delete_entry(key, id, policy, group)
    else
      out[i] = -1
    end
  end
  return out
end

if cmd == 'xreadgroup' then
  return read_noack()
elseif cmd == 'xdelex' then
  return delex()
end
return ackdel()
