-- depth: the partition's message counts by state, read together (read-only).
--
--@keys due active pending dlq dlqWorkflow
-- ARGV[1] now (ms)
-- Returns {ready, delayed, inFlight, pending, dlq, workflowDlq}: due now, due later, leased, not
-- finished, message DLQ entries (dlq minus the workflow runs' entries), workflow runs' entries.
-- One script so the counts come from one moment: a message moving between states while they are
-- read is counted once, and the two DLQ counts always add up to the DLQ's size.
local now = ARGV[1]
local total = redis.call('ZCARD', KEYS[4])
local workflow = redis.call('ZCARD', KEYS[5])
return {
  redis.call('ZCOUNT', KEYS[1], '-inf', now),
  redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf'),
  redis.call('ZCARD', KEYS[2]),
  redis.call('ZCARD', KEYS[3]),
  total - workflow,
  workflow,
}
