-- workflowEnd: ends active run R (RUN_SUCCESS, RUN_CANCELED or RUN_FAILED). See
-- docs/workflow.md §6. The caller cancels the returned messages; a message of an ended run that
-- is still delivered afterwards is dropped at delivery, so a crash between the two loses nothing.
--
--@keys workflowRun workflowMessages workflowSteps workflowNotes workflowStepInfo workflowErrors
-- ARGV[1] now (ms)  ARGV[2] new state  ARGV[3] retention ms of the ended run's records
-- ARGV[4 ..] extra field, value pairs (response, dlqId, error, failure)
-- Returns {unchanged} when R is unknown or already ended; {ok, message ids of R...} when it
-- ended now.
--@include codes
if redis.call('HGET', KEYS[1], 'state') ~= 'RUN_STARTED' then return {Code.unchanged} end
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'completedAt', ARGV[1])
for i = 4, #ARGV - 1, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
local ids = redis.call('SMEMBERS', KEYS[2])
redis.call('DEL', KEYS[2], KEYS[4])
for _, k in ipairs({KEYS[1], KEYS[3], KEYS[5], KEYS[6]}) do
  redis.call('PEXPIRE', k, ARGV[3])
end
local out = {Code.ok}
for _, id in ipairs(ids) do out[#out + 1] = id end
return out
