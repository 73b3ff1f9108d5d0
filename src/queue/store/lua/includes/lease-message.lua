-- leaseMessage: leases due message `id` (its meta JSON `meta`, for the log) to the holder of
-- `token` for `leaseMs` (from Redis's TIME; the holder renews it while the attempt runs): out of
-- the due set, into the active set, state ACTIVE. Used by claim and by the local hand-off of the
-- store scripts (a message leased to the process storing it, which saves a claim).
--@include keys
--@include lease-deadline
--@include add-log
local function leaseMessage(dueKey, activeKey, logKey, cutoff, now, id, meta, token, leaseMs)
  redis.call('ZREM', dueKey, id)
  redis.call('ZADD', activeKey, leaseDeadline(leaseMs), id)
  redis.call('HSET', Key.message(id), 'state', 'ACTIVE', 'lease', token)
  addLog(logKey, cutoff, now, id, 'ACTIVE', meta, '{}')
end
