-- dlqDelete: deletes DLQ entries.
--
--@keys dlq dlqWorkflow
-- ARGV[1] key prefix  ARGV[2..] dlq ids
-- Returns the number deleted.
--@include keys
local n = 0
for i = 2, #ARGV do
  if redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then n = n + 1 end
  redis.call('ZREM', KEYS[2], ARGV[i])
  redis.call('DEL', Key.dlqEntry(ARGV[i]))
end
return n
