-- depth: the partition's message counts by state, read together (read-only).
--
--@keys due active pending dlq dlqWorkflow parked
-- ARGV[1] now (ms)
-- Returns {ready, delayed, inFlight, pending, dlq, workflowDlq}: due now, due later, leased, not
-- finished, message DLQ entries (dlq minus the workflow runs' entries), workflow runs' entries.
-- Ready includes the due messages parked while their destination holds its share
-- (includes/parking.lua: `parked` holds each origin's count).
-- One script so the counts come from one moment: a message moving between states while they are
-- read is counted once, and the two DLQ counts always add up to the DLQ's size.
local now = ARGV[1]
local total = redis.call('ZCARD', KEYS[4])
local workflow = redis.call('ZCARD', KEYS[5])
local parked = 0
for _, n in ipairs(redis.call('HVALS', KEYS[6])) do parked = parked + tonumber(n) end
return {
  redis.call('ZCOUNT', KEYS[1], '-inf', now) + parked,
  redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf'),
  redis.call('ZCARD', KEYS[2]),
  redis.call('ZCARD', KEYS[3]),
  total - workflow,
  workflow,
}
