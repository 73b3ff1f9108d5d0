-- queueEnqueue: stores one enqueue (1..n messages, n > 1 for URL-group fan-out) at the tail of
-- queue ARGV[6], creating the queue (parallelism 1, unpaused) on first use unless ARGV[7] queues
-- exist already, atomically with its deduplication key; then admits as many waiting messages as
-- the queue has free slots (the slot logic is in includes/queue-admit.lua).
--
--@keys due pending log dedup queues
-- (dedup is used only when ARGV[4] ~= '0')
-- ARGV[1] key prefix  ARGV[2] now (ms)  ARGV[3] log cutoff  ARGV[4] dedup window ms
-- ARGV[5] publish response JSON kept under the dedup key  ARGV[6] queue name  ARGV[7] max queues
-- ARGV[8] most flow-control keys (per partition, see includes/fc-room.lua)
-- ARGV[9..] groups of 5: id, meta JSON, body, dueAt ms, timeout ms
-- Returns {ok, admitted count} when stored; {duplicate, <stored response>} when the dedup key was
-- taken; {tooManyQueues} (nothing stored) when the queue would be one too many;
-- {tooManyFlowControlKeys} (nothing stored) when its flow-control key would be one too many.
-- Events: CREATED per message (admission is not an event; claim logs ACTIVE).
--@include codes
--@include keys
--@include insert-message
--@include queue-ensure
--@include queue-admit
--@include fc-room
local now, cutoff, name = ARGV[2], ARGV[3], ARGV[6]
if ARGV[4] ~= '0' then
  local existing = redis.call('GET', KEYS[4])
  if existing then return {Code.duplicate, existing} end
end
if not fcKeysFit(9, (#ARGV - 8) / 5, ARGV[8]) then return {Code.tooManyFlowControlKeys} end
if not queueEnsure(KEYS[5], name, now, ARGV[7]) then return {Code.tooManyQueues} end
if ARGV[4] ~= '0' then redis.call('SET', KEYS[4], ARGV[5], 'PX', ARGV[4]) end
local wait = Key.queueWait(name)
for i = 9, #ARGV - 4, 5 do
  local id = ARGV[i]
  insertMessage(KEYS[1], KEYS[2], KEYS[3], cutoff, now,
    id, ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4])
  redis.call('ZREM', KEYS[1], id)
  redis.call('HSET', Key.message(id), 'queue', name, 'qdue', ARGV[i + 3])
  redis.call('RPUSH', wait, id)
end
return {Code.ok, queueAdmit(name, KEYS[1])}
