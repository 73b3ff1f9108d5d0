-- scheduleAdvance: records a fire of the tick ARGV[2] and moves the schedule to its next tick,
-- only if `next` still equals ARGV[2] (another process did not advance it, it was not replaced).
-- A paused or deleted schedule is not put back into the due set.
--
--@keys schedule scheduleDue
-- ARGV[1] id  ARGV[2] expected next ms  ARGV[3] fire time ms (last)  ARGV[4] new next ms
-- ARGV[5] states JSON  ARGV[6] error ('' when none)
-- Returns ok (advanced), or unchanged (lost the race, replaced or deleted).
--@include codes
local f = redis.call('HMGET', KEYS[1], 'next', 'paused')
if f[1] ~= ARGV[2] then return Code.unchanged end
redis.call('HSET', KEYS[1], 'next', ARGV[4], 'last', ARGV[3], 'states', ARGV[5], 'error', ARGV[6])
if f[2] ~= '1' then redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1]) end
return Code.ok
