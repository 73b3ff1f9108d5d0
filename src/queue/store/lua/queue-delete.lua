-- queueDelete: deletes a queue: its configuration and the messages still waiting for a slot
-- (CANCEL_REQUESTED, CANCELED). Admitted messages finish normally; their slots stay counted in
-- `qslots:<name>` until then (a queue re-created meanwhile sees them as running).
--
--@keys queue queues queueWait pending log
-- ARGV[1] key prefix  ARGV[2] now  ARGV[3] log cutoff  ARGV[4] queue name
-- Returns ok (deleted), or unchanged when the queue did not exist.
--@include codes
--@include keys
--@include add-log
local now, cutoff = ARGV[2], ARGV[3]
if redis.call('EXISTS', KEYS[1]) == 0 then return Code.unchanged end
for _, id in ipairs(redis.call('LRANGE', KEYS[3], 0, -1)) do
  local h = Key.message(id)
  local meta = redis.call('HGET', h, 'meta')
  if meta then
    redis.call('DEL', h)
    redis.call('ZREM', KEYS[4], id)
    addLog(KEYS[5], cutoff, now, id, 'CANCEL_REQUESTED', meta, '{}', 'CANCELED', '{}')
  end
end
redis.call('DEL', KEYS[1], KEYS[3])
redis.call('SREM', KEYS[2], ARGV[4])
return Code.ok
