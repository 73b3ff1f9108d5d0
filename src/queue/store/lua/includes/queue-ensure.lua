-- queueEnsure: creates queue `name` with the defaults (parallelism 1, unpaused) unless it exists.
-- Returns false (creating nothing) when it does not exist and `maxQueues` queues exist already.
--@include keys
local function queueEnsure(setKey, name, now, maxQueues)
  local q = Key.queue(name)
  if redis.call('EXISTS', q) == 1 then return true end
  if redis.call('SCARD', setKey) >= tonumber(maxQueues) then return false end
  redis.call('HSET', q, 'createdAt', now, 'parallelism', 1, 'paused', 0, 'updatedAt', now)
  redis.call('SADD', setKey, name)
  return true
end
