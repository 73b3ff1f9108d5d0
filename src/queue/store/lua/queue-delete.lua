-- queueDelete: deletes a queue: its configuration at once, and its messages still waiting for a
-- slot (CANCEL_REQUESTED, CANCELED) in bounded steps: the wait list is renamed to a drain list
-- (listed in `queueDrains` until empty) of which this call cancels the first ARGV[5]; the caller
-- drains the rest with queue-drain.lua, a step at a time. A queue of the same name may be made
-- meanwhile: its wait list is a new one. Admitted messages finish normally; their slots stay
-- counted in `qslots:<name>` until then (a queue re-created meanwhile sees them as running).
--
--@keys queue queues queueWait pending log queueDrain queueDrains
-- ARGV[1] key prefix  ARGV[2] now  ARGV[3] log cutoff  ARGV[4] queue name
-- ARGV[5] most waiting messages to cancel in this call
-- Returns the number of waiting messages left to drain (>= 0) when deleted, queueMissing when
-- the queue did not exist.
--@include codes
--@include keys
--@include queue-drain
local now, cutoff = ARGV[2], ARGV[3]
if redis.call('EXISTS', KEYS[1]) == 0 then return Code.queueMissing end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[4])
if redis.call('EXISTS', KEYS[3]) == 0 then return 0 end
redis.call('RENAME', KEYS[3], KEYS[6])
redis.call('SADD', KEYS[7], KEYS[6])
return drainQueue(KEYS[6], KEYS[7], KEYS[4], KEYS[5], cutoff, now, ARGV[5])
