-- queueForget: a waiting or admitted queue message (h, id) is removed: it leaves the wait list or
-- frees its slot.
--@include keys
--@include queue-release
local function queueForget(h, id, dueKey)
  local f = redis.call('HMGET', h, 'queue', 'slot')
  if f[2] then return queueRelease(h, dueKey, #ARGV + 1, true) end
  if f[1] then redis.call('LREM', Key.queueWait(f[1]), 1, id) end
  return 0
end
