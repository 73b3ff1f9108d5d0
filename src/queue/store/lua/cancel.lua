-- cancel: cancels messages. A waiting message is removed at once (CANCEL_REQUESTED, CANCELED); an
-- in-flight one is marked CANCEL_REQUESTED and finishes as CANCELED unless that attempt succeeds
-- (in-flight messages may still be delivered: docs/qstash-protocol.md 2.4).
--
--@keys due pending log parked
-- ARGV[1] key prefix  ARGV[2] now  ARGV[3] log cutoff  ARGV[4..] message ids
-- Returns the number of messages cancelled. A cancelled message ends (endMessage): a queue message
-- leaves its queue's wait list or frees its slot, and likewise for its flow-control key.
--@include keys
--@include add-log
--@include end-message
--@include parked-remove
local now, cutoff = ARGV[2], ARGV[3]
local n = 0
for i = 4, #ARGV do
  local id = ARGV[i]
  local h = Key.message(id)
  local f = redis.call('HMGET', h, 'state', 'meta')
  if f[1] == 'ACTIVE' then
    redis.call('HSET', h, 'state', 'CANCEL_REQUESTED')
    addLog(KEYS[3], cutoff, now, id, 'CANCEL_REQUESTED', f[2], '{}')
    n = n + 1
  elseif f[1] and f[1] ~= 'CANCEL_REQUESTED' then
    if redis.call('ZREM', KEYS[1], id) == 0 then parkedRemove(KEYS[4], h, id) end
    endMessage(h, id, KEYS[1], KEYS[2], now)
    addLog(KEYS[3], cutoff, now, id, 'CANCEL_REQUESTED', f[2], '{}', 'CANCELED', '{}')
    n = n + 1
  end
end
return n
