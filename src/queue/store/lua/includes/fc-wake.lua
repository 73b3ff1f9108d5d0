-- fcWake: admits for every flow-control key whose next rate period has begun. Returns the number
-- admitted.
--@include keys
--@include fc-admit
local function fcWake(dueKey, now)
  local n = 0
  for _, key in ipairs(redis.call('ZRANGEBYSCORE', Key.flowControlWake, '-inf', now)) do
    redis.call('ZREM', Key.flowControlWake, key)
    n = n + fcAdmit(key, dueKey, tonumber(now))
  end
  return n
end
