-- scheduleDelete: removes a schedule; messages it already produced stay.
--
--@keys schedule schedules scheduleDue
-- ARGV[1] id
-- Returns ok (deleted), or unchanged when it did not exist.
--@include codes
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('DEL', KEYS[1]) == 0 then return Code.unchanged end
return Code.ok
