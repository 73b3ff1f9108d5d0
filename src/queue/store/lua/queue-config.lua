-- queueConfig: creates or updates a queue (upsert), or pauses / resumes an existing one, then
-- admits what the new configuration allows (a lowered parallelism lets running slots finish).
--
--@keys queue queues due
-- ARGV[1] key prefix  ARGV[2] now  ARGV[3] queue name  ARGV[4] parallelism ('' = keep)
-- ARGV[5] paused '1' | '0' ('' = keep)  ARGV[6] 'create' to create a missing queue
-- ARGV[7] max queues (a missing queue is not created when that many exist)
-- Returns the number of messages admitted, queueMissing when the queue is missing and not to be
-- created, tooManyQueues when it is missing and would be one too many.
--@include codes
--@include queue-ensure
--@include queue-admit
local now, name = ARGV[2], ARGV[3]
if redis.call('EXISTS', KEYS[1]) == 0 and ARGV[6] ~= 'create' then return Code.queueMissing end
if not queueEnsure(KEYS[2], name, now, ARGV[7]) then return Code.tooManyQueues end
redis.call('HSET', KEYS[1], 'updatedAt', now)
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'parallelism', ARGV[4]) end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'paused', ARGV[5]) end
return queueAdmit(name, KEYS[3])
