-- workflowRelease: ends run R's wait for event E, by a notification or by its timeout, exactly
-- once: the first caller whose token matches the waiter appends the result entry to R's step
-- list (with its new message, or for the timeout the timeout message itself). See
-- docs/workflow.md §8.
--
--@keys workflowWaiters workflowRun workflowSteps workflowMessages due pending log
-- ARGV[1] key prefix  ARGV[2] now (ms)  ARGV[3] log cutoff  ARGV[4] run id
-- ARGV[5] the waiter's token (the id of its timeout message)
-- ARGV[6 .. 11] the result: message id, meta JSON ('' = the timeout message, already stored),
--   body, dueAt ms, timeout ms, step entry JSON
-- Returns ok when released now; duplicate when this same message released it before (a
-- redelivery of the timeout); unchanged when the wait was released by someone else (or never
-- registered); runNotActive when R is unknown or ended. Events: CREATED for a new message.
-- The new message's flow-control key was made (and held to the bound) by workflow-wait.lua with
-- the wait, from the same headers, so no key is made here.
--@include codes
--@include keys
--@include add-log
--@include insert-message
--@include fc-enter
local now, cutoff, run = ARGV[2], ARGV[3], ARGV[4]
local id, meta, dueAt = ARGV[6], ARGV[7], ARGV[9]
if redis.call('HGET', KEYS[2], 'state') ~= 'RUN_STARTED' then
  redis.call('HDEL', KEYS[1], run)
  return Code.runNotActive
end
if redis.call('HGET', KEYS[2], 'released:' .. id) then return Code.duplicate end
local w = redis.call('HGET', KEYS[1], run)
if not w or cjson.decode(w).token ~= ARGV[5] then return Code.unchanged end
redis.call('HDEL', KEYS[1], run)
redis.call('HSET', KEYS[2], 'released:' .. id, 1)
redis.call('RPUSH', KEYS[3], ARGV[11])
redis.call('SADD', KEYS[4], id)
if meta ~= '' then
  insertMessage(KEYS[5], KEYS[6], KEYS[7], cutoff, now, id, meta, ARGV[8], dueAt, ARGV[10])
  fcEnter(KEYS[5], id, meta, dueAt, now)
end
return Code.ok
