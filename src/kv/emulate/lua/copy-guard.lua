-- copy-guard: runs a command whose result copies data already in the database (COPY, the
-- *STORE commands, BITOP, SORT … STORE, RESTORE) on a database with a maxmemory, refusing it
-- when its result would not fit below that limit (copying-route.ts). Redis checks maxmemory only
-- before a command runs: at 60 of 64 MiB, COPY of a 40 MiB key ended at 100 MiB. The check and
-- the command run in one script, so nothing can run between them.
--
-- KEYS     the command's sources (the first ARGV[2] of them), then its destination
-- ARGV[1]  how the result's size follows from the sources' (MEMORY USAGE, 5 samples):
--            sum (COPY, SUNIONSTORE, ZUNIONSTORE), min (SINTERSTORE, ZINTERSTORE),
--            first (SDIFFSTORE, ZDIFFSTORE, ZRANGESTORE, GEO… STORE, SORT … STORE),
--            max (BITOP), sort (SORT … GET pattern … STORE: the values its patterns read),
--            restore (RESTORE: checked after it runs)
-- ARGV[2]  how many of KEYS are sources
-- ARGV[3…] the command, name first, as the client sent it
-- Returns  the command's reply, or an OOM error reply when its result would not fit.

local mode = ARGV[1]
local sources = tonumber(ARGV[2])
local command = {}
for i = 3, #ARGV do
  command[#command + 1] = ARGV[i]
end

--@include memory-room

-- SORT … GET pattern … STORE: what its GET patterns read for each element of the source, as
-- Redis looks them up (sort.c, lookupKeyByPattern: `#` is the element, the first `*` is replaced
-- by it, `->field` reads a hash field), plus a list entry's overhead; with LIMIT, the largest
-- `count` elements. Read by STRLEN and HSTRLEN, never by copying the values (the same SORT
-- without STORE built its whole result, 100 MB for a 100-element list, in the script's reply).
local function pattern_bytes(pattern, element)
  if pattern == '#' then
    return #element
  end
  local star = string.find(pattern, '*', 1, true)
  if not star then
    return 0
  end
  local arrow = string.find(pattern, '->', star + 1, true)
  local size
  if arrow and arrow + 2 <= #pattern then
    local hash = string.sub(pattern, 1, star - 1) .. element
      .. string.sub(pattern, star + 1, arrow - 1)
    size = redis.pcall('HSTRLEN', hash, string.sub(pattern, arrow + 2))
  else
    local name = string.sub(pattern, 1, star - 1) .. element .. string.sub(pattern, star + 1)
    size = redis.pcall('STRLEN', name)
  end
  return type(size) == 'number' and size or 0
end

local SORT_OPTION_ARGS = { BY = 1, LIMIT = 2, GET = 1, STORE = 1 }

local function sorted_bytes()
  local patterns, limit = {}, nil
  local i = 3
  while i <= #command do
    local option = string.upper(command[i])
    if option == 'GET' and command[i + 1] then
      patterns[#patterns + 1] = command[i + 1]
    elseif option == 'LIMIT' then
      limit = tonumber(command[i + 2])
    end
    i = i + 1 + (SORT_OPTION_ARGS[option] or 0)
  end
  local costs = {}
  local function add(elements)
    for _, element in ipairs(elements) do
      local cost = 16
      for _, pattern in ipairs(patterns) do
        cost = cost + pattern_bytes(pattern, element)
      end
      costs[#costs + 1] = cost
    end
  end
  local source = KEYS[1]
  local kind = redis.call('TYPE', source)['ok']
  if kind == 'set' then
    local cursor = '0'
    repeat
      local page = redis.call('SSCAN', source, cursor, 'COUNT', '1000')
      cursor = page[1]
      add(page[2])
    until cursor == '0'
  elseif kind == 'list' or kind == 'zset' then
    local range = kind == 'list' and 'LRANGE' or 'ZRANGE'
    local from = 0
    repeat
      local page = redis.call(range, source, from, from + 999)
      add(page)
      from = from + 1000
    until #page < 1000
  end
  if limit and limit >= 0 and limit < #costs then
    table.sort(costs, function(a, b) return a > b end)
  else
    limit = #costs
  end
  local total = 0
  for k = 1, limit do
    total = total + costs[k]
  end
  return total
end

local name = string.upper(command[1])

if mode == 'restore' then
  local used, max = memory_now()
  -- The payload is as large as the request may be, but its compressed strings expand: a
  -- RESTORE may pass the limit by its payload's size, as a SET may, not by what it expands to.
  local reply = redis.pcall(unpack(command))
  if type(reply) == 'table' and reply.err then
    return reply
  end
  local after = memory_now()
  if max > 0 and after > math.max(used, max) + #command[4] then
    redis.call('DEL', KEYS[1])
    return no_room(name, after - used, max - used)
  end
  return reply
end

local bytes = 0
if mode == 'sort' then
  bytes = sorted_bytes()
else
  for i = 1, sources do
    local size = key_bytes(KEYS[i])
    if i == 1 or mode == 'sum' then
      bytes = bytes + size
    elseif mode == 'min' then
      bytes = math.min(bytes, size)
    elseif mode == 'max' then
      bytes = math.max(bytes, size)
    end
  end
end

return room_refusal(name, bytes) or redis.pcall(unpack(command))
