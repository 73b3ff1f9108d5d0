-- scheduleSave: creates or replaces a schedule (a replacement starts afresh: unpaused, no last
-- fire). A new schedule is refused when ARGV[5] schedules exist already (a replacement never is).
--
-- Schedules (docs/qstash-protocol.md 2.6): a schedule is a hash `<p>sched:<id>` (store/keys.ts);
-- an unpaused one is also in the `sched-due` zset under its next fire time. A fire stores its
-- messages through the ordinary enqueue script (deduplicated per schedule and tick), then
-- advances the schedule with scheduleAdvance, a compare-and-set on `next`: of several processes
-- firing the same tick, exactly one advances it.
--
--@keys schedule schedules scheduleDue
-- ARGV[1] id  ARGV[2] def JSON  ARGV[3] body  ARGV[4] next fire ms  ARGV[5] max schedules
-- Returns ok, or tooManySchedules when refused (nothing changed).
--@include codes
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0
  and redis.call('SCARD', KEYS[2]) >= tonumber(ARGV[5]) then
  return Code.tooManySchedules
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'def', ARGV[2], 'body', ARGV[3], 'next', ARGV[4], 'last', 0,
  'paused', 0, 'states', '{}', 'error', '')
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
return Code.ok
