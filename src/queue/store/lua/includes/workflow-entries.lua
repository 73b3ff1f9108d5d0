-- workflowEntries: appends step entries to a workflow run's step list from ARGV[from] on, in
-- groups of 6 (message id, meta JSON or '' for an entry without a new message, body, dueAt ms,
-- timeout ms, entry JSON), storing each new message as an ordinary queue message (see
-- docs/workflow.md §5). The run's keys are passed in, never built here. With `handOff` (a table
-- of activeKey, token, leaseMs) the new messages due by `now` and not held by a flow-control key
-- are leased to its holder at once, as enqueue does for a publish (local hand-off).
--@include store-new
local function workflowEntries(dueKey, pendingKey, logKey, stepsKey, idsKey, cutoff, now, from,
    handOff)
  local keys = {due = dueKey, pending = pendingKey, log = logKey,
    active = handOff and handOff.activeKey}
  local token, leaseMs = handOff and handOff.token or '', handOff and handOff.leaseMs
  for i = from, #ARGV - 5, 6 do
    local id, meta = ARGV[i], ARGV[i + 1]
    redis.call('RPUSH', stepsKey, ARGV[i + 5])
    redis.call('SADD', idsKey, id)
    if meta ~= '' then
      storeNew(keys, cutoff, now, id, meta, ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], token, leaseMs)
    end
  end
end

-- The hand-off of a store script: lease `token` ('' = none) for `leaseMs` into `activeKey`.
local function handOffOf(activeKey, token, leaseMs)
  if token == '' then return nil end
  return {activeKey = activeKey, token = token, leaseMs = leaseMs}
end
