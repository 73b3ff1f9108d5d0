-- hash: hash-field expiration on a Redis without it, the body of hash-write.lua and
-- hash-read.lua (see docs/compatibility.md, "Hash-field expiration").
--
-- KEYS[1]  the hash
-- KEYS[2]  its companion: a hash of field -> absolute deadline in Unix milliseconds, holding an
--          entry only for fields that have a TTL. No companion means no field has a TTL.
-- KEYS[3], KEYS[4]  (rename, renamenx, copy only) the destination key and its companion
--          (del, unlink: KEYS holds every key named, each followed by its companion)
-- ARGV[1]  the lower-case command name, prefixed with `+` when the command is a plain hash
--          command that runs natively on a hash without field TTLs (the fast path below);
--          ARGV[2..] the command's arguments after its key(s)
-- Returns  what Redis 8.2 returns for that command, errors included.
--
-- READ_ONLY (set by the including script) is true in the `no-writes` variant, which runs read
-- commands only: it never deletes an expired field, it filters it out of the reply. The write
-- variant first deletes the hash's expired fields, then runs the command natively.
local key, meta = KEYS[1], KEYS[2]
local cmd = ARGV[1]
-- Fast path, before anything else is set up: with no companion (no field TTLs), or for a read
-- when no deadline has passed yet, the command runs as is.
if string.byte(cmd, 1) == 43 then -- '+'
  cmd = string.sub(cmd, 2)
  if redis.call('EXISTS', meta) == 0 then
    return redis.pcall(cmd, key, unpack(ARGV, 2))
  end
  if READ_ONLY then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    local due = false
    for _, at in ipairs(redis.call('HVALS', meta)) do
      if tonumber(at) <= now then
        due = true
        break
      end
    end
    if not due then
      return redis.pcall(cmd, key, unpack(ARGV, 2))
    end
  end
end
--@include arguments
local args = {}
for i = 2, #ARGV do
  args[#args + 1] = ARGV[i]
end

-- Redis's hash-field deadlines are capped at 2^46 - 1 ms (EB_EXPIRE_TIME_MAX >> 2).
local MAX_AT = 70368744177663

local NOT_INT = 'ERR value is not an integer or out of range'

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function is_hash()
  return key_of_type(key, 'hash')
end

-- field -> deadline for the hash's fields with a TTL, or nil when none has one. A companion
-- left behind by a deleted hash (or one replaced by another type) counts as none.
local function deadlines()
  if redis.call('EXISTS', meta) == 0 or redis.call('TYPE', key)['ok'] ~= 'hash' then
    return nil
  end
  local flat = redis.call('HGETALL', meta)
  local out = {}
  for i = 1, #flat, 2 do
    out[flat[i]] = tonumber(flat[i + 1])
  end
  return out
end

-- The fields past their deadline (that still exist in the hash), and how many there are.
local function expired_fields(d, now)
  local set, n = {}, 0
  for f, at in pairs(d) do
    if at <= now and redis.call('HEXISTS', key, f) == 1 then
      set[f] = true
      n = n + 1
    end
  end
  return set, n
end

-- Write variant: deletes expired fields (and a stale companion) before the command runs.
local function purge(now)
  if redis.call('EXISTS', meta) == 0 then
    return
  end
  if redis.call('TYPE', key)['ok'] ~= 'hash' then
    redis.call('DEL', meta)
    return
  end
  local flat = redis.call('HGETALL', meta)
  for i = 1, #flat, 2 do
    if tonumber(flat[i + 1]) <= now then
      redis.call('HDEL', key, flat[i])
      redis.call('HDEL', meta, flat[i])
    end
  end
end

local function forget(fields)
  if #fields > 0 and redis.call('EXISTS', meta) == 1 then
    redis.call('HDEL', meta, unpack(fields))
  end
end

local function native()
  return redis.pcall(cmd, key, unpack(args))
end

-- Arguments from position `from` on, stepping by `step` (field names of HSET-like commands).
local function every(from, step)
  local out = {}
  for i = from, #args, step do
    out[#out + 1] = args[i]
  end
  return out
end

-- FIELDS numfields field… starting at args[at]; returns the fields or nil and an error reply.
local function fields_at(at, count_error)
  return counted_items(args, at, 'FIELDS', {
    missing = 'ERR Mandatory argument FIELDS is missing or not at the right position',
    count = count_error,
    mismatch = 'ERR The `numfields` parameter must match the number of arguments',
  })
end

-- The hash's FIELDS list at args[at] and whether the hash exists, or nil and an error reply.
local function hash_fields(at, count_error)
  local exists = is_hash()
  if type(exists) == 'table' then
    return nil, exists
  end
  local fields, e = fields_at(at, count_error)
  if not fields then
    return nil, e
  end
  return fields, exists
end

local FIELD_COUNT = 'ERR Number of fields must be a positive integer'
local FIELD_COUNT_EXPIRE = 'ERR Parameter `numFields` should be greater than 0'

-- Absolute deadline (ms) from an EX/PX/EXAT/PXAT-style amount, or an error reply. A deadline
-- past Redis's cap is accepted and stored as the cap, as Upstash accepts it (Redis 7.4+ answers
-- "invalid expire time"; docs/compatibility.md, "Hash-field expiration").
local function deadline_of(amount, unit_ms, relative, now)
  local n = int(amount)
  if n == nil then
    return nil, fail(NOT_INT)
  end
  if n < 0 then
    return nil, fail('ERR invalid expire time, must be >= 0')
  end
  local base = relative and now or 0
  if n > math.floor((MAX_AT - base) / unit_ms) then
    return MAX_AT
  end
  return n * unit_ms + base
end

-- The companion expires with the hash (EXPIRE & co. keep them in step, see key_expiry below).
local function set_deadline(f, at)
  redis.call('HSET', meta, f, at)
  local hash_at = redis.call('PEXPIRETIME', key)
  if hash_at > 0 then
    redis.call('PEXPIREAT', meta, hash_at)
  end
end

---------------------------------------------------------------------------------------------
-- Reads (both variants). `d` is deadlines(), non-nil.

local function live_pairs(flat, expired)
  local out = {}
  for i = 1, #flat, 2 do
    if not expired[flat[i]] then
      out[#out + 1] = flat[i]
      out[#out + 1] = flat[i + 1]
    end
  end
  return out
end

local function pick(flat, offset)
  local out = {}
  for i = offset, #flat, 2 do
    out[#out + 1] = flat[i]
  end
  return out
end

-- HRANDFIELD over the live pairs, with Redis's semantics for the count's sign.
local function random_fields(live, count, withvalues)
  local n = #live / 2
  local out = {}
  local function emit(i)
    out[#out + 1] = live[2 * i - 1]
    if withvalues then
      out[#out + 1] = live[2 * i]
    end
  end
  if count == nil then
    if n == 0 then
      return false
    end
    return live[2 * math.random(n) - 1]
  end
  if count >= 0 then
    local order = {}
    for i = 1, n do
      order[i] = i
    end
    for i = n, 2, -1 do
      local j = math.random(i)
      order[i], order[j] = order[j], order[i]
    end
    for i = 1, math.min(count, n) do
      emit(order[i])
    end
  elseif n > 0 then
    for _ = 1, -count do
      emit(math.random(n))
    end
  end
  return out
end

local function read_filtered(d, now)
  local expired, gone = expired_fields(d, now)
  if gone == 0 then
    return native()
  end
  if cmd == 'hget' or cmd == 'hexists' or cmd == 'hstrlen' then
    local r = native()
    if type(r) == 'table' and r.err then
      return r
    end
    if expired[args[1]] then
      if cmd == 'hget' then
        return false
      end
      return 0
    end
    return r
  elseif cmd == 'hmget' then
    local r = native()
    if type(r) == 'table' and r.err then
      return r
    end
    for i = 1, #args do
      if expired[args[i]] then
        r[i] = false
      end
    end
    return r
  elseif cmd == 'hlen' then
    return redis.call('HLEN', key) - gone
  elseif cmd == 'hgetall' or cmd == 'hkeys' or cmd == 'hvals' then
    local live = live_pairs(redis.call('HGETALL', key), expired)
    if cmd == 'hgetall' then
      return live
    end
    return pick(live, cmd == 'hkeys' and 1 or 2)
  elseif cmd == 'hscan' then
    local r = native()
    if type(r) == 'table' and r.err then
      return r
    end
    r[2] = live_pairs(r[2], expired)
    return r
  elseif cmd == 'hrandfield' then
    local r = native() -- validates the arguments exactly as Redis does
    if type(r) == 'table' and r.err then
      return r
    end
    local live = live_pairs(redis.call('HGETALL', key), expired)
    local withvalues = args[2] ~= nil and string.upper(args[2]) == 'WITHVALUES'
    return random_fields(live, args[1] and int(args[1]), withvalues)
  end
  return native()
end

-- HTTL, HPTTL, HEXPIRETIME, HPEXPIRETIME.
local TTL_UNITS = {
  httl = { 1000, true },
  hpttl = { 1, true },
  hexpiretime = { 1000, false },
  hpexpiretime = { 1, false },
}

local function ttl_of(now)
  local fields, exists = hash_fields(1, FIELD_COUNT)
  if not fields then
    return exists
  end
  local unit, relative = TTL_UNITS[cmd][1], TTL_UNITS[cmd][2]
  local d = deadlines() or {}
  local out = {}
  for i, f in ipairs(fields) do
    local at = d[f]
    if not exists or redis.call('HEXISTS', key, f) == 0 or (at and at <= now) then
      out[i] = -2
    elseif not at then
      out[i] = -1
    else
      -- HTTL rounds up as Redis does; HEXPIRETIME floors, as Upstash answers (Redis rounds it
      -- up too, a second past a deadline set by HEXPIRE; docs/compatibility.md).
      if relative then
        out[i] = unit == 1000 and math.floor((at - now + 999) / 1000) or at - now
      else
        out[i] = unit == 1000 and math.floor(at / 1000) or at
      end
    end
  end
  return out
end

---------------------------------------------------------------------------------------------
-- Writes (write variant only). Expired fields are already gone when these run.

local EXPIRE_UNITS = {
  hexpire = { 1000, true },
  hpexpire = { 1, true },
  hexpireat = { 1000, false },
  hpexpireat = { 1, false },
}

local function expire_fields(now)
  local exists = is_hash()
  if type(exists) == 'table' then
    return exists
  end
  local unit, relative = EXPIRE_UNITS[cmd][1], EXPIRE_UNITS[cmd][2]
  local at, e = deadline_of(args[1], unit, relative, now)
  if not at then
    return e
  end
  local cond = string.upper(args[2] or '')
  local from = 2
  if cond == 'NX' or cond == 'XX' or cond == 'GT' or cond == 'LT' then
    from = 3
  else
    cond = nil
  end
  local fields
  fields, e = fields_at(from, FIELD_COUNT_EXPIRE)
  if not fields then
    return e
  end
  local out = {}
  for i, f in ipairs(fields) do
    local cur = exists and tonumber(redis.call('HGET', meta, f)) or nil
    if not exists or redis.call('HEXISTS', key, f) == 0 then
      out[i] = -2
    elseif
      (cond == 'NX' and cur)
      or ((cond == 'XX' or cond == 'GT') and not cur)
      or (cond == 'GT' and at <= cur)
      or (cond == 'LT' and cur and at >= cur)
    then
      out[i] = 0
    elseif at <= now then
      redis.call('HDEL', key, f)
      redis.call('HDEL', meta, f)
      out[i] = 2
    else
      set_deadline(f, at)
      out[i] = 1
    end
  end
  return out
end

local function persist_fields()
  local fields, exists = hash_fields(1, FIELD_COUNT)
  if not fields then
    return exists
  end
  local out = {}
  for i, f in ipairs(fields) do
    if not exists or redis.call('HEXISTS', key, f) == 0 then
      out[i] = -2
    elseif redis.call('HDEL', meta, f) == 1 then
      out[i] = 1
    else
      out[i] = -1
    end
  end
  return out
end

local function values_of(fields)
  local out = {}
  for i, f in ipairs(fields) do
    out[i] = redis.call('HGET', key, f)
  end
  return out
end

local EXPIRE_OPTIONS = {
  EX = { 1000, true },
  PX = { 1, true },
  EXAT = { 1000, false },
  PXAT = { 1, false },
}

-- HGETEX key [EX s | PX ms | EXAT s | PXAT ms | PERSIST] FIELDS numfields field…
local function getex(now)
  local exists = is_hash()
  if type(exists) == 'table' then
    return exists
  end
  local opt = string.upper(args[1] or '')
  local from, at = 1, nil
  if opt == 'PERSIST' then
    from = 2
  elseif EXPIRE_OPTIONS[opt] then
    from = 3
  end
  local fields, e = fields_at(from, FIELD_COUNT)
  if not fields then
    return e
  end
  if EXPIRE_OPTIONS[opt] then
    at, e = deadline_of(args[2], EXPIRE_OPTIONS[opt][1], EXPIRE_OPTIONS[opt][2], now)
    if not at then
      return e
    end
  end
  local out = values_of(fields)
  if not exists then
    return out
  end
  for _, f in ipairs(fields) do
    if redis.call('HEXISTS', key, f) == 1 then
      if opt == 'PERSIST' then
        redis.call('HDEL', meta, f)
      elseif at and at <= now then
        redis.call('HDEL', key, f)
        redis.call('HDEL', meta, f)
      elseif at then
        set_deadline(f, at)
      end
    end
  end
  return out
end

-- HGETDEL key FIELDS numfields field…
local function getdel()
  local fields, exists = hash_fields(1, FIELD_COUNT)
  if not fields then
    return exists
  end
  local out = values_of(fields)
  if exists then
    redis.call('HDEL', key, unpack(fields))
    forget(fields)
  end
  return out
end

-- HSETEX key [FNX | FXX] [EX s | PX ms | EXAT s | PXAT ms | KEEPTTL] FIELDS numfields field value…
local function setex(now)
  local cond, ttl, amount = nil, nil, nil
  local i = 1
  while args[i] ~= nil and string.upper(args[i]) ~= 'FIELDS' do
    local a = string.upper(args[i])
    if a == 'FNX' or a == 'FXX' then
      if cond then
        return fail('ERR Only one of FXX or FNX arguments can be specified')
      end
      cond = a
    elseif a == 'KEEPTTL' or EXPIRE_OPTIONS[a] then
      if ttl then
        return fail('ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified')
      end
      ttl = a
      if a ~= 'KEEPTTL' then
        i = i + 1
        amount = args[i]
        if amount ~= nil and string.upper(amount) == 'FIELDS' then
          return fail(NOT_INT)
        end
      end
    else
      return fail('ERR unknown argument')
    end
    i = i + 1
  end
  if args[i] == nil then
    return fail("ERR wrong number of arguments for 'hsetex' command")
  end
  local n = int(args[i + 1])
  if n == nil or n < 1 then
    return fail('ERR invalid number of fields')
  end
  if n * 2 ~= #args - i - 1 then
    return fail("ERR wrong number of arguments for 'hsetex' command")
  end
  local at, e
  if ttl and ttl ~= 'KEEPTTL' then
    at, e = deadline_of(amount, EXPIRE_OPTIONS[ttl][1], EXPIRE_OPTIONS[ttl][2], now)
    if not at then
      return e
    end
  end
  local exists = is_hash()
  if type(exists) == 'table' then
    return exists
  end
  local fields = {}
  for j = i + 2, #args, 2 do
    fields[#fields + 1] = args[j]
    local has = exists and redis.call('HEXISTS', key, args[j]) == 1
    if (cond == 'FNX' and has) or (cond == 'FXX' and not has) then
      return 0
    end
  end
  if at and at <= now then
    if exists then
      redis.call('HDEL', key, unpack(fields))
      forget(fields)
    end
    return 1
  end
  for j = i + 2, #args, 2 do
    redis.call('HSET', key, args[j], args[j + 1])
    if at then
      set_deadline(args[j], at)
    elseif ttl ~= 'KEEPTTL' then
      forget({ args[j] })
    end
  end
  return 1
end

-- A native write, then what it does to field TTLs: HSET & co. drop the TTL of each field they
-- set, HDEL drops the TTL with the field, HINCRBY & co. keep it.
local function write_native()
  local r = native()
  if type(r) == 'table' and r.err then
    return r
  end
  if cmd == 'hset' or cmd == 'hmset' then
    forget(every(1, 2))
  elseif cmd == 'hsetnx' and r == 1 or cmd == 'hdel' then
    forget(cmd == 'hdel' and args or { args[1] })
  end
  if redis.call('EXISTS', key) == 0 then
    redis.call('DEL', meta)
  end
  return r
end

local function copies_to_other_db()
  for _, a in ipairs(args) do
    if string.upper(a) == 'DB' then
      return true
    end
  end
  return false
end

--@include memory-room

-- RENAME / RENAMENX / COPY move or copy the companion with the hash (KEYS[3] is the
-- destination, KEYS[4] its companion). COPY of a key onto itself answers 0 (as Upstash does).
-- COPY is refused when the copy would not fit below maxmemory (memory-room.lua).
local function move_with_companion()
  local dst, dst_meta = KEYS[3], KEYS[4]
  if cmd == 'copy' and key == dst then
    return 0
  end
  if cmd == 'copy' and not copies_to_other_db() then
    local refusal = room_refusal('COPY', key_bytes(key) + key_bytes(meta))
    if refusal then
      return refusal
    end
  end
  local r = redis.pcall(string.upper(cmd), key, dst, unpack(args))
  if type(r) == 'table' and r.err or r == 0 then
    return r
  end
  if key == dst or (cmd == 'copy' and copies_to_other_db()) then
    return r
  end
  redis.call('DEL', dst_meta)
  if redis.call('EXISTS', meta) == 1 and redis.call('TYPE', dst)['ok'] == 'hash' then
    if cmd == 'copy' then
      redis.call('COPY', meta, dst_meta)
    else
      redis.call('RENAME', meta, dst_meta)
    end
  end
  return r
end

--@include delete-with-companions

-- EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, PERSIST: the companion gets the hash's new key TTL.
local KEY_EXPIRY = {
  expire = true,
  pexpire = true,
  expireat = true,
  pexpireat = true,
  persist = true,
}

local function key_expiry()
  local r = native()
  if r ~= 1 or redis.call('EXISTS', meta) == 0 then
    return r
  end
  local at = redis.call('PEXPIRETIME', key)
  if at > 0 then
    redis.call('PEXPIREAT', meta, at)
  elseif at == -1 then
    redis.call('PERSIST', meta)
  else
    redis.call('DEL', meta)
  end
  return r
end

---------------------------------------------------------------------------------------------

if cmd == 'del' or cmd == 'unlink' then
  return delete_with_companions(cmd)
elseif KEY_EXPIRY[cmd] then
  return key_expiry()
end
local now = now_ms()
if TTL_UNITS[cmd] then
  return ttl_of(now)
end
if READ_ONLY then
  local d = deadlines()
  if d == nil then
    return native()
  end
  return read_filtered(d, now)
end
if cmd == 'rename' or cmd == 'renamenx' or cmd == 'copy' then
  return move_with_companion()
end
purge(now)
if EXPIRE_UNITS[cmd] then
  return expire_fields(now)
elseif cmd == 'hpersist' then
  return persist_fields()
elseif cmd == 'hgetex' then
  return getex(now)
elseif cmd == 'hgetdel' then
  return getdel()
elseif cmd == 'hsetex' then
  return setex(now)
end
return write_native()
