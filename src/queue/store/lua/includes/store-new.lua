-- storeNew: stores one new message of a store script (enqueue, a workflow's step entries):
-- with a lease `token` ('' = none), a message due by `now` and not held by a flow-control key is
-- leased to its holder at once (local hand-off, as Dispatcher.offer expects: insertLeased);
-- otherwise it is inserted due at dueAt and a flow-controlled one waits for its key (fcJoin).
-- insertLeased stores a message straight as ACTIVE under the lease: the state insertMessage
-- followed by leaseMessage leaves, with the same two events (CREATED, ACTIVE), without passing
-- through the due set (4 commands fewer per handed-off message: ZADD and ZREM of the due set, an
-- HSET, a TIME).
--@include keys
--@include add-log
--@include origin
--@include lease-deadline
--@include insert-message
--@include fc-join
local function insertLeased(pendingKey, activeKey, logKey, cutoff, now, id, meta, body, tmo,
    token, leaseMs)
  redis.call('HSET', Key.message(id), 'meta', meta, 'body', body, 'state', 'ACTIVE',
    'retried', 0, 'tmo', tmo, 'origin', metaOrigin(meta), 'lease', token)
  redis.call('ZADD', pendingKey, now, id)
  redis.call('ZADD', activeKey, leaseDeadline(leaseMs), id)
  addLog(logKey, cutoff, now, id, 'CREATED', meta, '{}', 'ACTIVE', '{}')
end

local function storeNew(keys, cutoff, now, id, meta, body, dueAt, tmo, token, leaseMs)
  local fc = flowControlOf(meta)
  if token ~= '' and not fc and tonumber(dueAt) <= tonumber(now) then
    insertLeased(keys.pending, keys.active, keys.log, cutoff, now, id, meta, body, tmo, token,
      leaseMs)
    return
  end
  insertMessage(keys.due, keys.pending, keys.log, cutoff, now, id, meta, body, dueAt, tmo)
  if fc then fcJoin(keys.due, id, fc, dueAt, now) end
end
