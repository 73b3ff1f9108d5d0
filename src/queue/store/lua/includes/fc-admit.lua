-- Flow control (docs/qstash-protocol.md 2.11, 3.3; docs/queue.md, Flow control). A message whose
-- meta carries `flowControl` does not go into the due set when stored (or, for a FIFO queue
-- message, when its queue admits it): it waits in `fcwait:<key>`, oldest first, until the key
-- admits it into the due set at its own due time. The key admits while unpaused, fewer than
-- `parallelism` of its messages are admitted and unfinished (`count`; 0 = unlimited), and fewer
-- than `rate` were admitted in the current period (`rstart`, `rcount`; 0 = unlimited). A message
-- holds its parallelism slot from admission until DELIVERED, FAILED or CANCELED, retries included
-- (callbacks do not). When the rate is used up the key is put in `fcwake` at the start of the next
-- period, where the reap script admits again. Everything happens inside the atomic scripts, so the
-- limits hold across processes. Admission counts as the start: a delayed message at the head holds
-- its slot and rate while it waits (order is kept).
--
-- fcAdmit: admits waiting messages of flow-control key `key` as far as its limits allow (now: ms
-- number). Returns the number admitted.
--@include keys
local function fcAdmit(key, dueKey, now)
  local k = Key.flowControl(key)
  local f = redis.call('HMGET', k, 'parallelism', 'rate', 'period', 'count', 'rstart', 'rcount',
    'paused')
  if f[7] == '1' then return 0 end
  local par, rate = tonumber(f[1] or '0'), tonumber(f[2] or '0')
  local periodMs = tonumber(f[3] or '1') * 1000
  local count, rstart, rcount = tonumber(f[4] or '0'), tonumber(f[5] or '0'), tonumber(f[6] or '0')
  local wait = Key.flowControlWait(key)
  local n = 0
  while redis.call('LLEN', wait) > 0 do
    if par > 0 and count >= par then break end
    if now >= rstart + periodMs then rstart, rcount = now, 0 end
    if rate > 0 and rcount >= rate then
      redis.call('ZADD', Key.flowControlWake, rstart + periodMs, key)
      break
    end
    local id = redis.call('LPOP', wait)
    local h = Key.message(id)
    local due = redis.call('HGET', h, 'fcdue')
    if due then
      redis.call('HSET', h, 'fcslot', 1)
      redis.call('ZADD', dueKey, due, id)
      count, rcount, n = count + 1, rcount + 1, n + 1
    end
  end
  redis.call('HSET', k, 'count', count, 'rstart', rstart, 'rcount', rcount)
  return n
end
