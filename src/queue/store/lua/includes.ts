/**
 * Lua helpers prepended to every queue script (scripts are embedded as strings so the build needs
 * no asset copying). `addLog` appends one state change to the log stream, trimming entries older
 * than the retention cutoff; `insertMessage` stores a new message as CREATED and due at `dueAt`;
 * `leaseDeadline` is when a lease taken or renewed now ends, on Redis's own clock (TIME), so that
 * processes on hosts whose clocks disagree never reap a lease another process still holds.
 */
import { FLOW_INCLUDES } from "./flow-includes.js";
import { QUEUE_INCLUDES } from "./queue-includes.js";

export const LUA_INCLUDES = `
local function leaseDeadline(leaseMs)
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(leaseMs)
end

local function addLog(logKey, cutoff, now, id, state, meta, extra)
  redis.call('XADD', logKey, 'MINID', '~', cutoff, '*',
    'id', id, 'state', state, 'time', now, 'meta', meta, 'extra', extra)
end

local function insertMessage(prefix, dueKey, pendingKey, logKey, cutoff, now, id, meta, body, dueAt, tmo)
  redis.call('HSET', prefix .. 'msg:' .. id, 'meta', meta, 'body', body, 'state', 'CREATED',
    'retried', 0, 'tmo', tmo)
  redis.call('ZADD', dueKey, dueAt, id)
  redis.call('ZADD', pendingKey, now, id)
  addLog(logKey, cutoff, now, id, 'CREATED', meta, '{}')
end

-- Inserts the messages given as (id, meta, body, dueAt, tmo) groups from ARGV[first] on.
local function insertFrom(first, prefix, dueKey, pendingKey, logKey, cutoff, now)
  local i = first
  while i + 4 <= #ARGV do
    insertMessage(prefix, dueKey, pendingKey, logKey, cutoff, now,
      ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4])
    i = i + 5
  end
end
${FLOW_INCLUDES}
${QUEUE_INCLUDES}
`;
