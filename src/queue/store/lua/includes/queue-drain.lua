-- drainQueue: cancels up to `limit` of the waiting messages of a deleted FIFO queue, whose wait
-- list queue-delete.lua renamed to `drainKey` (CANCEL_REQUESTED, CANCELED), oldest first; when
-- the list is empty it leaves the `drainsKey` set of lists being drained. Returns how many ids
-- are left in the list. A bounded step, so a queue of any length is deleted in many short scripts
-- (QueueStore.delete) instead of one that holds Redis (200,000 messages: 11 s).
--@include add-log
local function drainQueue(drainKey, drainsKey, pendingKey, logKey, cutoff, now, limit)
  local ids = redis.call('LRANGE', drainKey, 0, tonumber(limit) - 1)
  for _, id in ipairs(ids) do
    local h = Key.message(id)
    local meta = redis.call('HGET', h, 'meta')
    if meta then
      redis.call('DEL', h)
      redis.call('ZREM', pendingKey, id)
      addLog(logKey, cutoff, now, id, 'CANCEL_REQUESTED', meta, '{}', 'CANCELED', '{}')
    end
  end
  redis.call('LTRIM', drainKey, #ids, -1)
  local left = redis.call('LLEN', drainKey)
  if left == 0 then redis.call('SREM', drainsKey, drainKey) end
  return left
end
