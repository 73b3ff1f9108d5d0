-- insertMessage: stores a new message as CREATED, due at dueAt (not yet in a queue or a
-- flow-control wait list; the caller routes it).
--@include keys
--@include add-log
local function insertMessage(dueKey, pendingKey, logKey, cutoff, now, id, meta, body, dueAt, tmo)
  redis.call('HSET', Key.message(id), 'meta', meta, 'body', body, 'state', 'CREATED',
    'retried', 0, 'tmo', tmo)
  redis.call('ZADD', dueKey, dueAt, id)
  redis.call('ZADD', pendingKey, now, id)
  addLog(logKey, cutoff, now, id, 'CREATED', meta, '{}')
end
