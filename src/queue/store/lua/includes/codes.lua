-- codes: the status codes scripts return, one number per meaning. The same table as
-- src/queue/store/codes.ts (ScriptCode); test/queue/lua-contracts.test.ts compares them.
local Code = {
  unchanged = 0,
  ok = 1,
  canceled = 2,
  duplicate = 3,
  leaseLost = -1,
  queueMissing = -2,
  tooManyQueues = -3,
  flowControlKeyMissing = -4,
  urlGroupMissing = -5,
  tooManySchedules = -6,
  runNotActive = -7,
  tooManySteps = -8,
  tooManyKept = -9,
  tooManyEndpoints = -10,
  tooManyFlowControlKeys = -11,
  eventKept = 4,
  waiting = 5,
}
