-- addLog: appends one state change of message `id` to the log stream (trimming entries older than
-- the retention cutoff, a stream id in ms), or two when `state2` is given (the pairs a transition
-- writes together: CREATED+ACTIVE, ERROR+RETRY, ...). The new stream ids are also pushed onto the
-- message's log index, Key.messageLog(id) (a list, oldest first), which expires a retention after
-- its last event, so it never outlives them by more than the stream's approximate trimming.
-- Cost per call: the XADDs, one RPUSH and one PEXPIRE. Needs the keys include first.
local function addLog(logKey, cutoff, now, id, state, meta, extra, state2, extra2)
  local ids = {redis.call('XADD', logKey, 'MINID', '~', cutoff, '*',
    'id', id, 'state', state, 'time', now, 'meta', meta, 'extra', extra)}
  if state2 then
    ids[2] = redis.call('XADD', logKey, 'MINID', '~', cutoff, '*',
      'id', id, 'state', state2, 'time', now, 'meta', meta, 'extra', extra2)
  end
  local index = Key.messageLog(id)
  redis.call('RPUSH', index, unpack(ids))
  redis.call('PEXPIRE', index, math.max(1, tonumber(now) - tonumber(cutoff)))
end
