-- memory-room: whether a command's result fits below the database's maxmemory, shared by
-- copy-guard.lua and hash.lua's COPY. Redis checks maxmemory only before a command runs, so a
-- command whose result copies stored data passes it by that result; a script measures the
-- sources first and runs the command only when it fits (nothing runs in between).

-- Redis's own measure (evict.c): used memory less the replication and AOF buffers; and the
-- limit (0: none).
local function memory_now()
  local info = redis.call('INFO', 'memory')
  local used = tonumber(string.match(info, 'used_memory:(%d+)'))
  local not_counted = tonumber(string.match(info, 'mem_not_counted_for_evict:(%d+)')) or 0
  local max = tonumber(string.match(info, '\nmaxmemory:(%d+)')) or 0
  return used - not_counted, max
end

-- A key's size as MEMORY USAGE estimates it (5 samples of its elements); 0 when it is missing.
local function key_bytes(name)
  return redis.call('MEMORY', 'USAGE', name, 'SAMPLES', '5') or 0
end

-- The OOM error reply for `what` (a command name) storing about `bytes` with `room` left.
local function no_room(what, bytes, room)
  return redis.error_reply(
    "OOM command not allowed when used memory > 'maxmemory'. stashd: " .. what
      .. ' would store about ' .. string.format('%d', bytes) .. ' bytes, and '
      .. string.format('%d', math.max(room, 0))
      .. ' are left below the max data size (Redis checks its limit only before a command runs)'
  )
end

-- nil when `bytes` more fit below maxmemory (or there is none), else the OOM error reply.
local function room_refusal(what, bytes)
  local used, max = memory_now()
  if max == 0 or used + bytes <= max then
    return nil
  end
  return no_room(what, bytes, max - used)
end
