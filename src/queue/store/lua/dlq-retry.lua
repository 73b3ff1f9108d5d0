-- dlqRetry: turns a DLQ entry into a new message (new id, original body) and removes the entry.
--
--@keys dlq due pending log dlqWorkflow
-- ARGV[1] key prefix  ARGV[2] now  ARGV[3] log cutoff  ARGV[4] dlq id
-- ARGV[5..9] the new message: id, meta JSON, (ignored body placeholder), dueAt, timeout ms
-- Returns ok, or unchanged when the entry does not exist. Events: CREATED.
--@include codes
--@include keys
--@include insert-message
local e = Key.dlqEntry(ARGV[4])
if redis.call('EXISTS', e) == 0 then return Code.unchanged end
local body = redis.call('HGET', e, 'body') or ''
redis.call('DEL', e)
redis.call('ZREM', KEYS[1], ARGV[4])
redis.call('ZREM', KEYS[5], ARGV[4])
insertMessage(KEYS[2], KEYS[3], KEYS[4], ARGV[3], ARGV[2], ARGV[5], ARGV[6], body, ARGV[8], ARGV[9])
return Code.ok
