-- workflowEntries: appends step entries to a workflow run's step list from ARGV[from] on, in
-- groups of 6 (message id, meta JSON or '' for an entry without a new message, body, dueAt ms,
-- timeout ms, entry JSON), storing each new message as an ordinary queue message (see
-- docs/workflow.md §5). The run's keys are passed in, never built here.
--@include insert-message
--@include fc-enter
local function workflowEntries(dueKey, pendingKey, logKey, stepsKey, idsKey, cutoff, now, from)
  for i = from, #ARGV - 5, 6 do
    local id, meta, dueAt = ARGV[i], ARGV[i + 1], ARGV[i + 3]
    redis.call('RPUSH', stepsKey, ARGV[i + 5])
    redis.call('SADD', idsKey, id)
    if meta ~= '' then
      insertMessage(dueKey, pendingKey, logKey, cutoff, now, id, meta, ARGV[i + 2], dueAt,
        ARGV[i + 4])
      fcEnter(dueKey, id, meta, dueAt, now)
    end
  end
end
