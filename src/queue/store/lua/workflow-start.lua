-- workflowStart: creates workflow run R with its first entries, unless R is active. A trigger
-- gives one entry with its message; a resumed run gives the failed run's earlier entries
-- (entries only) and then the message to deliver. See docs/workflow.md §3 and §4. With a lease
-- token, the new messages due now and not flow-controlled are leased to the caller at once
-- (local hand-off, as enqueue does for a publish).
--
--@keys due pending log workflowRun workflowSteps workflowMessages workflowRuns active
-- ARGV[1] key prefix  ARGV[2] now (ms)  ARGV[3] log cutoff  ARGV[4] run id
-- ARGV[5] lease token ('' = no hand-off)  ARGV[6] lease ms (from Redis's TIME)
-- ARGV[7] most flow-control keys (per partition, see includes/fc-room.lua)
-- ARGV[8] n, the number of run hash fields; ARGV[9 .. 8+2n] field, value pairs
-- ARGV[9+2n ..] groups of 6: message id, meta JSON ('' = entry only), body, dueAt ms,
--   timeout ms, step entry JSON. The first group is entry 0 (the trigger).
-- Returns {ok} when the run was created; {duplicate, id of the run's first message} when R is
-- active (nothing is created: the caller answers `deduplicated`); {tooManyFlowControlKeys} when
-- its messages name flow-control keys that do not exist yet and would pass ARGV[7] (nothing is
-- created or removed). An ended run's id starts a fresh run.
-- Events: CREATED per message, then ACTIVE when leased.
--@include codes
--@include keys
--@include workflow-entries
--@include fc-room
local now, cutoff = ARGV[2], ARGV[3]
if redis.call('HGET', KEYS[4], 'state') == 'RUN_STARTED' then
  return {Code.duplicate, redis.call('HGET', KEYS[4], 'initId')}
end
local first = 9 + 2 * tonumber(ARGV[8])
if not fcKeysFit(first, (#ARGV - first + 1) / 6, ARGV[7], 6) then
  return {Code.tooManyFlowControlKeys}
end
redis.call('DEL', KEYS[4], KEYS[5], KEYS[6])
for i = 9, first - 1, 2 do
  redis.call('HSET', KEYS[4], ARGV[i], ARGV[i + 1])
end
redis.call('HSET', KEYS[4], 'state', 'RUN_STARTED', 'initId', ARGV[first], 'createdAt', now)
redis.call('ZADD', KEYS[7], now, ARGV[4])
workflowEntries(KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[6], cutoff, now, first,
  handOffOf(KEYS[8], ARGV[5], ARGV[6]))
return {Code.ok}
