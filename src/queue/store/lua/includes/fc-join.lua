-- flowControlOf(meta): a stored meta's flow-control table, nil without one (cheap for most
-- messages: a substring test before any JSON decoding). fcJoin(dueKey, id, fc, dueAt, now): stored
-- message id, whose flow-control table is `fc`, enters its key's wait list (leaving the due set)
-- and the key admits; the message's config becomes the key's (the parts not pinned). fcMake(fc,
-- now): makes key fc.key if new (added to `fckeys`) and gives it fc's config (the parts not
-- pinned); its hash key.
--@include keys
--@include fc-admit
local function flowControlOf(meta)
  if not string.find(meta, '"flowControl"', 1, true) then return nil end
  local fc = cjson.decode(meta).flowControl
  if type(fc) ~= 'table' then return nil end
  return fc
end

local function fcMake(fc, now)
  local k = Key.flowControl(fc.key)
  if redis.call('HSETNX', k, 'createdAt', now) == 1 then
    redis.call('SADD', Key.flowControlKeys, fc.key)
  end
  local pin = redis.call('HMGET', k, 'pinP', 'pinR')
  if pin[1] ~= '1' then redis.call('HSET', k, 'parallelism', fc.parallelism or 0) end
  if pin[2] ~= '1' then redis.call('HSET', k, 'rate', fc.rate or 0, 'period', fc.period or 1) end
  return k
end

local function fcJoin(dueKey, id, fc, dueAt, now)
  fcMake(fc, now)
  redis.call('ZREM', dueKey, id)
  redis.call('HSET', Key.message(id), 'fc', fc.key, 'fcdue', dueAt)
  redis.call('RPUSH', Key.flowControlWait(fc.key), id)
  fcAdmit(fc.key, dueKey, tonumber(now))
  return true
end
