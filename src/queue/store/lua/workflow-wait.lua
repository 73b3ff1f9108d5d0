-- workflowWait: run R waits for event E (context.waitForEvent / waitForWebhook). See
-- docs/workflow.md §8. If R was already notified of E (a run-scoped notification or webhook
-- call kept for its next wait), that notification is taken instead and nothing is registered.
-- Otherwise the waiter is registered together with its timeout message, an ordinary queue
-- message due at the deadline that is not in R's step list until it wins (workflowRelease).
--
--@keys workflowWaiters workflowNotes workflowRun workflowMessages due pending log
-- ARGV[1] key prefix  ARGV[2] now (ms)  ARGV[3] log cutoff  ARGV[4] run id  ARGV[5] event id
-- ARGV[6] waiter JSON  ARGV[7 .. 11] the timeout message: id, meta JSON, body, dueAt, timeout ms
-- Returns {runNotActive}; {eventKept, event data} when a kept notification was taken; {ok} when
-- registered. Events: CREATED for the timeout message.
--@include codes
--@include keys
--@include add-log
--@include insert-message
--@include fc-enter
local now, cutoff = ARGV[2], ARGV[3]
if redis.call('HGET', KEYS[3], 'state') ~= 'RUN_STARTED' then return {Code.runNotActive} end
local kept = redis.call('HGET', KEYS[2], ARGV[5])
if kept then
  local list = cjson.decode(kept)
  local first = table.remove(list, 1)
  if #list == 0 then
    redis.call('HDEL', KEYS[2], ARGV[5])
  else
    redis.call('HSET', KEYS[2], ARGV[5], cjson.encode(list))
  end
  return {Code.eventKept, first}
end
redis.call('HSET', KEYS[1], ARGV[4], ARGV[6])
local id, meta, dueAt = ARGV[7], ARGV[8], ARGV[10]
redis.call('SADD', KEYS[4], id)
insertMessage(KEYS[5], KEYS[6], KEYS[7], cutoff, now, id, meta, ARGV[9], dueAt, ARGV[11])
fcEnter(KEYS[5], id, meta, dueAt, now)
return {Code.ok}
