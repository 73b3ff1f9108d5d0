-- schedulePause: pauses (ARGV[2] = '1') or resumes (ARGV[2] = '0', next fire ARGV[3]) a schedule;
-- idempotent. A resumed schedule starts from the first tick after the resume.
--
--@keys schedule scheduleDue
-- ARGV[1] id  ARGV[2] paused flag  ARGV[3] next fire ms (resume)
-- Returns ok, or unchanged when the schedule does not exist.
--@include codes
if redis.call('EXISTS', KEYS[1]) == 0 then return Code.unchanged end
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'paused', 1)
  redis.call('ZREM', KEYS[2], ARGV[1])
elseif redis.call('HGET', KEYS[1], 'paused') == '1' then
  redis.call('HSET', KEYS[1], 'paused', 0, 'next', ARGV[3])
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
end
return Code.ok
