-- flowControlManage: applies one management action (docs/qstash-protocol.md 2.11) to an existing
-- flow-control key and admits what the change allows (admission: includes/fc-admit.lua).
--
--@keys flowControl due
-- ARGV[1] key prefix  ARGV[2] now (ms)  ARGV[3] flow-control key
-- ARGV[4] action: pause | resume | pin | unpin | resetRate | reset
-- pin: ARGV[5] parallelism  ARGV[6] rate  ARGV[7] period s ('' = not pinned by this call); pins
--   what is given and starts a new rate period.
-- unpin: ARGV[5] '1' to unpin parallelism  ARGV[6] '1' to unpin rate (values stay as they are).
-- resetRate starts a new rate period; reset also zeroes the parallelism count.
-- Returns the number of messages admitted, flowControlKeyMissing when the key does not exist.
--@include codes
--@include fc-admit
local now, key, action = tonumber(ARGV[2]), ARGV[3], ARGV[4]
if redis.call('EXISTS', KEYS[1]) == 0 then return Code.flowControlKeyMissing end
if action == 'pause' then
  redis.call('HSET', KEYS[1], 'paused', 1)
  return 0
elseif action == 'resume' then
  redis.call('HSET', KEYS[1], 'paused', 0)
elseif action == 'pin' then
  if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'parallelism', ARGV[5], 'pinP', 1) end
  if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'rate', ARGV[6], 'pinR', 1) end
  if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'period', ARGV[7], 'pinR', 1) end
  redis.call('HSET', KEYS[1], 'rstart', now, 'rcount', 0)
elseif action == 'unpin' then
  if ARGV[5] == '1' then redis.call('HSET', KEYS[1], 'pinP', 0) end
  if ARGV[6] == '1' then redis.call('HSET', KEYS[1], 'pinR', 0) end
  return 0
elseif action == 'resetRate' then
  redis.call('HSET', KEYS[1], 'rstart', now, 'rcount', 0)
elseif action == 'reset' then
  redis.call('HSET', KEYS[1], 'rstart', now, 'rcount', 0, 'count', 0)
end
return fcAdmit(key, KEYS[2], now)
