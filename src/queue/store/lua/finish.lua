-- finish: records the outcome of one delivery attempt by the lease holder.
--
--@keys due active pending log dlq dlqWorkflow
-- ARGV[1] key prefix  ARGV[2] now  ARGV[3] log cutoff  ARGV[4] message id  ARGV[5] lease token
-- ARGV[6] outcome: DELIVERED | RETRY | FAILED  ARGV[7] attempt JSON (response, error) for the log
-- ARGV[8] next due ms (RETRY)  ARGV[9] dlq id (FAILED)  ARGV[10] dlq meta JSON (FAILED)
-- ARGV[11..] callback messages to create, groups of 5 as in enqueue
-- Returns ok, canceled (cancel requested while in flight, finished as CANCELED), or leaseLost
-- (the reaper returned it; another attempt owns the message now).
-- Events: DELIVERED | ERROR,RETRY | ERROR,FAILED | CANCELED; CREATED per callback message.
-- A queue message's slot passes to its callback messages; a final outcome ends the message
-- (endMessage: its own hold on the slot ends, which admits the queue's next messages when the
-- slot is free, and its flow-control slot is freed; a retry keeps both).
--@include codes
--@include keys
--@include add-log
--@include insert-from
--@include queue-release
--@include end-message
local now, cutoff, id = ARGV[2], ARGV[3], ARGV[4]
local h = Key.message(id)
local f = redis.call('HMGET', h, 'lease', 'state', 'meta', 'queue', 'slot', 'fc', 'fcslot')
if f[1] ~= ARGV[5] then return Code.leaseLost end
redis.call('ZREM', KEYS[2], id)
local outcome = ARGV[6]
if f[2] == 'CANCEL_REQUESTED' and outcome ~= 'DELIVERED' then outcome = 'CANCELED' end
if outcome == 'RETRY' then
  redis.call('HINCRBY', h, 'retried', 1)
  redis.call('HSET', h, 'state', 'RETRY')
  redis.call('HDEL', h, 'lease')
  redis.call('ZADD', KEYS[1], ARGV[8], id)
  queueRelease(h, KEYS[1], 11, false)
  addLog(KEYS[4], cutoff, now, id, 'ERROR', f[3], ARGV[7], 'RETRY', '{}')
else
  if outcome == 'FAILED' then
    local body = redis.call('HGET', h, 'body')
    redis.call('HSET', Key.dlqEntry(ARGV[9]), 'meta', ARGV[10], 'body', body)
    redis.call('ZADD', KEYS[5], 0, ARGV[9])
    -- A workflow run's entry is also indexed, so counts can tell it from a message's.
    if type(cjson.decode(ARGV[10]).workflow) == 'table' then
      redis.call('ZADD', KEYS[6], 0, ARGV[9])
    end
    addLog(KEYS[4], cutoff, now, id, 'ERROR', f[3], ARGV[7], outcome, ARGV[7])
  else
    addLog(KEYS[4], cutoff, now, id, outcome, f[3], ARGV[7])
  end
  local route = {f[4], f[5], f[6], f[7]}
  endMessage(h, id, KEYS[1], KEYS[3], now, outcome ~= 'CANCELED' and 11 or nil, route)
end
if outcome == 'CANCELED' then return Code.canceled end
insertFrom(11, KEYS[1], KEYS[3], KEYS[4], cutoff, now)
return Code.ok
