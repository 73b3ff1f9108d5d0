/**
 * Lua helpers for flow control (spec 2.11, 3.3), prepended to every queue script with
 * LUA_INCLUDES (before the FIFO helpers, which route admitted messages through fcEnter).
 *
 * A message whose meta carries `flowControl` does not go into the due set when stored (or, for a
 * FIFO queue message, when its queue admits it): it waits in `fcwait:<key>`, oldest first, until
 * the key admits it into the due set at its own due time. The key admits while unpaused, fewer
 * than `parallelism` of its messages are admitted and unfinished (`count`; 0 = unlimited), and
 * fewer than `rate` were admitted in the current period (`rstart`, `rcount`; 0 = unlimited). A
 * message holds its parallelism slot from admission until DELIVERED, FAILED or CANCELED, retries
 * included (callbacks do not). When the rate is used up the key is put in `fcwake` at the start
 * of the next period, where the reap script admits again. Everything happens inside the atomic
 * scripts, so the limits hold across processes. Admission counts as the start: a delayed message
 * at the head holds its slot and rate while it waits (order is kept).
 */
export const FLOW_INCLUDES = `
-- Admits waiting messages of flow-control key \`key\` as far as its limits allow (now: ms number).
-- Returns the number admitted.
local function fcAdmit(prefix, key, dueKey, now)
  local k = prefix .. 'fc:' .. key
  local f = redis.call('HMGET', k, 'parallelism', 'rate', 'period', 'count', 'rstart', 'rcount',
    'paused')
  if f[7] == '1' then return 0 end
  local par, rate = tonumber(f[1] or '0'), tonumber(f[2] or '0')
  local periodMs = tonumber(f[3] or '1') * 1000
  local count, rstart, rcount = tonumber(f[4] or '0'), tonumber(f[5] or '0'), tonumber(f[6] or '0')
  local wait = prefix .. 'fcwait:' .. key
  local n = 0
  while redis.call('LLEN', wait) > 0 do
    if par > 0 and count >= par then break end
    if now >= rstart + periodMs then rstart, rcount = now, 0 end
    if rate > 0 and rcount >= rate then
      redis.call('ZADD', prefix .. 'fcwake', rstart + periodMs, key)
      break
    end
    local id = redis.call('LPOP', wait)
    local h = prefix .. 'msg:' .. id
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

-- Stored message (id, meta) due at dueAt enters its flow-control key's wait list (leaving the
-- due set) and the key admits; the message's config becomes the key's (parts not pinned).
-- Returns false (no-op) when the message has no flow control.
local function fcEnter(prefix, dueKey, id, meta, dueAt, now)
  if not string.find(meta, '"flowControl"', 1, true) then return false end
  local fc = cjson.decode(meta).flowControl
  if type(fc) ~= 'table' then return false end
  local k = prefix .. 'fc:' .. fc.key
  if redis.call('HSETNX', k, 'createdAt', now) == 1 then
    redis.call('SADD', prefix .. 'fckeys', fc.key)
  end
  local pin = redis.call('HMGET', k, 'pinP', 'pinR')
  if pin[1] ~= '1' then redis.call('HSET', k, 'parallelism', fc.parallelism or 0) end
  if pin[2] ~= '1' then redis.call('HSET', k, 'rate', fc.rate or 0, 'period', fc.period or 1) end
  redis.call('ZREM', dueKey, id)
  redis.call('HSET', prefix .. 'msg:' .. id, 'fc', fc.key, 'fcdue', dueAt)
  redis.call('RPUSH', prefix .. 'fcwait:' .. fc.key, id)
  fcAdmit(prefix, fc.key, dueKey, tonumber(now))
  return true
end

-- Message (h, id) is finished or removed: frees its parallelism slot (and admits) or leaves its
-- key's wait list. No-op without flow control.
local function fcRelease(prefix, h, id, dueKey, now)
  local f = redis.call('HMGET', h, 'fc', 'fcslot')
  if not f[1] then return 0 end
  if not f[2] then
    redis.call('LREM', prefix .. 'fcwait:' .. f[1], 1, id)
    return 0
  end
  redis.call('HDEL', h, 'fcslot')
  local k = prefix .. 'fc:' .. f[1]
  if redis.call('HINCRBY', k, 'count', -1) < 0 then redis.call('HSET', k, 'count', 0) end
  return fcAdmit(prefix, f[1], dueKey, tonumber(now))
end

-- Admits for every key whose next rate period has begun. Returns the number admitted.
local function fcWake(prefix, dueKey, now)
  local wake = prefix .. 'fcwake'
  local n = 0
  for _, key in ipairs(redis.call('ZRANGEBYSCORE', wake, '-inf', now)) do
    redis.call('ZREM', wake, key)
    n = n + fcAdmit(prefix, key, dueKey, tonumber(now))
  end
  return n
end
`;
