-- reap: returns expired leases (a stashd that died or hung mid-delivery) to the due set, so the
-- message is attempted again: at-least-once. The lost attempt does not count as a retry. Expiry
-- is judged on Redis's clock (TIME), like the deadlines, never on the caller's `now`.
--
--@keys active due pending log
-- ARGV[1] key prefix  ARGV[2] now  ARGV[3] log cutoff  ARGV[4] limit
-- Also admits the waiting messages of flow-control keys whose next rate period has begun (fcWake).
-- Returns the number of leases returned plus messages admitted. Events: RETRY (or CANCELED if
-- cancel was requested).
--@include keys
--@include lease-deadline
--@include add-log
--@include end-message
--@include fc-wake
local now, cutoff = ARGV[2], ARGV[3]
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', leaseDeadline(0), 'LIMIT', 0, ARGV[4])
for _, id in ipairs(ids) do
  redis.call('ZREM', KEYS[1], id)
  local h = Key.message(id)
  local f = redis.call('HMGET', h, 'state', 'meta')
  if f[1] == 'CANCEL_REQUESTED' then
    endMessage(h, id, KEYS[2], KEYS[3], now)
    addLog(KEYS[4], cutoff, now, id, 'CANCELED', f[2], '{}')
  elseif f[1] then
    redis.call('HSET', h, 'state', 'RETRY')
    redis.call('HDEL', h, 'lease')
    redis.call('ZADD', KEYS[2], now, id)
    addLog(KEYS[4], cutoff, now, id, 'RETRY', f[2], '{"error":"delivery lease expired"}')
  end
end
return #ids + fcWake(KEYS[2], now)
