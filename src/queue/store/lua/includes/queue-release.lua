-- queueRelease: message hash h hands its queue slot on to the new messages ARGV[first..] (groups
-- of 5 as in enqueue: its callbacks, which the queue's next message waits for); with `done` h's
-- own hold ends. When no holder is left the slot is free and the queue admits. No-op outside a
-- slot.
--@include keys
--@include queue-admit
local function queueRelease(h, dueKey, first, done)
  local f = redis.call('HMGET', h, 'queue', 'slot')
  if not f[2] then return 0 end
  local n = 0
  for i = first, #ARGV - 4, 5 do
    redis.call('HSET', Key.message(ARGV[i]), 'queue', f[1], 'slot', f[2])
    n = n + 1
  end
  if done then n = n - 1 end
  local slots = Key.queueSlots(f[1])
  if redis.call('HINCRBY', slots, f[2], n) > 0 then return 0 end
  redis.call('HDEL', slots, f[2])
  return queueAdmit(f[1], dueKey)
end
