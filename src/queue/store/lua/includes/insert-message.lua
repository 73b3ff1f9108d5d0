-- insertMessage: stores a new message as CREATED, due at dueAt (not yet in a queue or a
-- flow-control wait list; the caller routes it), with its delivery origin in the `origin` field
-- (read by claim; messages stored before that field existed have none).
--@include keys
--@include add-log
--@include origin
local function insertMessage(dueKey, pendingKey, logKey, cutoff, now, id, meta, body, dueAt, tmo)
  redis.call('HSET', Key.message(id), 'meta', meta, 'body', body, 'state', 'CREATED',
    'retried', 0, 'tmo', tmo, 'origin', metaOrigin(meta))
  redis.call('ZADD', dueKey, dueAt, id)
  redis.call('ZADD', pendingKey, now, id)
  addLog(logKey, cutoff, now, id, 'CREATED', meta, '{}')
end
