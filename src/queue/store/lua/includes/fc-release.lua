-- fcRelease: message (h, id) is finished or removed: frees its flow-control parallelism slot (and
-- the key admits) or leaves its key's wait list. No-op without flow control. `known`: the hash's
-- fc and fcslot fields when the caller has read them.
--@include keys
--@include fc-admit
local function fcRelease(h, id, dueKey, now, known)
  local f = known or redis.call('HMGET', h, 'fc', 'fcslot')
  if not f[1] then return 0 end
  if not f[2] then
    redis.call('LREM', Key.flowControlWait(f[1]), 1, id)
    return 0
  end
  redis.call('HDEL', h, 'fcslot')
  local k = Key.flowControl(f[1])
  if redis.call('HINCRBY', k, 'count', -1) < 0 then redis.call('HSET', k, 'count', 0) end
  return fcAdmit(f[1], dueKey, tonumber(now))
end
