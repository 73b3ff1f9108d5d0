-- workflowKeep: a notification for run R and event E (notify by run, or a webhook call). If R
-- waits for E the caller gets the waiter to release; otherwise the event data is kept for R's
-- next wait on E, in arrival order, until R ends. See docs/workflow.md §8.
--
--@keys workflowWaiters workflowNotes workflowRun
-- ARGV[1] run id  ARGV[2] event id  ARGV[3] event data (base64)  ARGV[4] most kept per event
-- Returns {runNotActive}; {waiting, waiter JSON} when R waits; {eventKept} when kept;
-- {tooManyKept}.
--@include codes
if redis.call('HGET', KEYS[3], 'state') ~= 'RUN_STARTED' then return {Code.runNotActive} end
local w = redis.call('HGET', KEYS[1], ARGV[1])
if w then return {Code.waiting, w} end
local kept = redis.call('HGET', KEYS[2], ARGV[2])
local list = kept and cjson.decode(kept) or {}
if #list >= tonumber(ARGV[4]) then return {Code.tooManyKept} end
list[#list + 1] = ARGV[3]
redis.call('HSET', KEYS[2], ARGV[2], cjson.encode(list))
return {Code.eventKept}
