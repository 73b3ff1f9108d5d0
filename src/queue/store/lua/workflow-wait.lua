-- workflowWait: run R waits for event E (context.waitForEvent / waitForWebhook). See
-- docs/workflow.md §8. If R was already notified of E (a run-scoped notification or webhook
-- call kept for its next wait), that notification is taken instead and nothing is registered.
-- Otherwise the waiter is registered together with its timeout message, an ordinary queue
-- message due at the deadline that is not in R's step list until it wins (workflowRelease).
--
--@keys workflowWaiters workflowNotes workflowRun workflowMessages due pending log
-- ARGV[1] key prefix  ARGV[2] now (ms)  ARGV[3] log cutoff  ARGV[4] run id  ARGV[5] event id
-- ARGV[6] waiter JSON  ARGV[7 .. 11] the timeout message: id, meta JSON, body, dueAt, timeout ms
-- ARGV[12] most flow-control keys (per partition, see includes/fc-room.lua)
-- ARGV[13] the meta JSON of the message a notification will make ('' = none; its id is not used)
-- Returns {runNotActive}; {eventKept, event data} when a kept notification was taken; {ok} when
-- registered; {tooManyFlowControlKeys} when the timeout message or the notification's message
-- names a flow-control key that does not exist yet and the two would pass ARGV[12] (nothing
-- registered). A registered wait makes both keys now: the release (workflow-release.lua), whose
-- message is made from the same headers, then finds its key and never makes one.
-- Events: CREATED for the timeout message.
--@include codes
--@include keys
--@include add-log
--@include insert-message
--@include fc-enter
--@include fc-fit
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
if not fcMetasFit({ARGV[8], ARGV[13]}, ARGV[12]) then return {Code.tooManyFlowControlKeys} end
redis.call('HSET', KEYS[1], ARGV[4], ARGV[6])
local id, meta, dueAt = ARGV[7], ARGV[8], ARGV[10]
redis.call('SADD', KEYS[4], id)
insertMessage(KEYS[5], KEYS[6], KEYS[7], cutoff, now, id, meta, ARGV[9], dueAt, ARGV[11])
fcEnter(KEYS[5], id, meta, dueAt, now)
local notified = flowControlOf(ARGV[13])
if notified then fcMake(notified, now) end
return {Code.ok}
