-- dlqIndex: adds DLQ ids of workflow runs' entries to the workflow index (entries written by a
-- stashd older than the index; see DlqStore.indexWorkflow).
--
--@keys dlq dlqWorkflow
-- ARGV[1..] dlq ids of workflow entries
-- Returns how many were added. An id no longer in the DLQ (deleted or retried meanwhile) is
-- skipped, so the index never names an entry that is gone.
local n = 0
for i = 1, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then n = n + redis.call('ZADD', KEYS[2], 0, ARGV[i]) end
end
return n
