-- addLog: appends one state change to the log stream, trimming entries older than the retention
-- cutoff (a stream id in ms).
local function addLog(logKey, cutoff, now, id, state, meta, extra)
  redis.call('XADD', logKey, 'MINID', '~', cutoff, '*',
    'id', id, 'state', state, 'time', now, 'meta', meta, 'extra', extra)
end
