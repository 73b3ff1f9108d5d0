-- workflowAppend: appends entries to the step list of active run R, in argument order, storing
-- each entry's message (if it has one) as an ordinary queue message. See docs/workflow.md §5.
-- With a lease token, the new messages due now and not flow-controlled are leased to the caller
-- at once (local hand-off, as enqueue does for a publish).
--
--@keys due pending log workflowRun workflowSteps workflowMessages active
-- ARGV[1] key prefix  ARGV[2] now (ms)  ARGV[3] log cutoff  ARGV[4] max entries per run
-- ARGV[5] lease token ('' = no hand-off)  ARGV[6] lease ms (from Redis's TIME)
-- ARGV[7] most flow-control keys (per partition, see includes/fc-room.lua)
-- ARGV[8 ..] groups of 6: message id, meta JSON ('' = entry only, the message exists already),
--   body, dueAt ms, timeout ms, step entry JSON
-- Returns ok when appended; runNotActive when R is unknown or ended, tooManySteps when the list
-- would exceed the maximum, tooManyFlowControlKeys when the messages name flow-control keys that
-- do not exist yet and would pass ARGV[7] (nothing stored in any of these cases).
-- Events: CREATED per message, then ACTIVE when leased.
--@include codes
--@include keys
--@include workflow-entries
--@include fc-room
local now, cutoff = ARGV[2], ARGV[3]
if redis.call('HGET', KEYS[4], 'state') ~= 'RUN_STARTED' then return Code.runNotActive end
if redis.call('LLEN', KEYS[5]) + (#ARGV - 7) / 6 > tonumber(ARGV[4]) then
  return Code.tooManySteps
end
if not fcKeysFit(8, (#ARGV - 7) / 6, ARGV[7], 6) then return Code.tooManyFlowControlKeys end
workflowEntries(KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[6], cutoff, now, 8,
  handOffOf(KEYS[7], ARGV[5], ARGV[6]))
return Code.ok
