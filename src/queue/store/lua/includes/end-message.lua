-- endMessage: message (h, id) has ended (DELIVERED, FAILED or CANCELED) and is removed, the one
-- end-of-message sequence of finish, reap and cancel: its queue slot passes to the callback
-- messages ARGV[first..] (groups of 5 as in enqueue; `first` nil: none take it) and its own hold
-- ends (queueRelease), or, never admitted, it leaves its queue's wait list; its flow-control slot
-- is freed or it leaves that key's wait list (fcRelease); its hash and its entry in the pending
-- set are deleted. Taking it out of the due or active set, and logging its final state, stay with
-- the caller (each logs other states). `route`, when the caller has read them already: the hash's
-- fields queue, slot, fc and fcslot, in that order (saves reading them here).
--@include keys
--@include queue-release
--@include fc-release
local function endMessage(h, id, dueKey, pendingKey, now, first, route)
  local f = route or redis.call('HMGET', h, 'queue', 'slot', 'fc', 'fcslot')
  if f[2] then
    queueRelease(h, dueKey, first or (#ARGV + 1), true)
  elseif f[1] then
    redis.call('LREM', Key.queueWait(f[1]), 1, id)
  end
  fcRelease(h, id, dueKey, now, {f[3], f[4]})
  redis.call('DEL', h)
  redis.call('ZREM', pendingKey, id)
end
