-- fcEnter: stored message (id, meta) due at dueAt enters its flow-control key's wait list
-- (leaving the due set) and the key admits; the message's config becomes the key's (the parts
-- not pinned). Returns false (no-op) when the message has no flow control.
--@include keys
--@include fc-admit
local function fcEnter(dueKey, id, meta, dueAt, now)
  if not string.find(meta, '"flowControl"', 1, true) then return false end
  local fc = cjson.decode(meta).flowControl
  if type(fc) ~= 'table' then return false end
  local k = Key.flowControl(fc.key)
  if redis.call('HSETNX', k, 'createdAt', now) == 1 then
    redis.call('SADD', Key.flowControlKeys, fc.key)
  end
  local pin = redis.call('HMGET', k, 'pinP', 'pinR')
  if pin[1] ~= '1' then redis.call('HSET', k, 'parallelism', fc.parallelism or 0) end
  if pin[2] ~= '1' then redis.call('HSET', k, 'rate', fc.rate or 0, 'period', fc.period or 1) end
  redis.call('ZREM', dueKey, id)
  redis.call('HSET', Key.message(id), 'fc', fc.key, 'fcdue', dueAt)
  redis.call('RPUSH', Key.flowControlWait(fc.key), id)
  fcAdmit(fc.key, dueKey, tonumber(now))
  return true
end
