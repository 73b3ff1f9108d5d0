-- claim: takes up to ARGV[4] due messages and leases them to the caller.
--
--@keys due active log
-- ARGV[1] key prefix  ARGV[2] now  ARGV[3] log cutoff  ARGV[4] limit  ARGV[5] lease ms (from
-- Redis's TIME; renewed by the holder while the attempt runs, see renew)  ARGV[6] lease token
-- Returns a flat array of (id, meta, body, retried) per claimed message.
-- Events: ACTIVE. Ids whose hash is gone (cancelled meanwhile) are dropped.
--@include keys
--@include lease-deadline
--@include add-log
local now = tonumber(ARGV[2])
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, ARGV[4])
local out = {}
for _, id in ipairs(ids) do
  redis.call('ZREM', KEYS[1], id)
  local h = Key.message(id)
  local f = redis.call('HMGET', h, 'meta', 'body', 'retried')
  if f[1] then
    redis.call('ZADD', KEYS[2], leaseDeadline(ARGV[5]), id)
    redis.call('HSET', h, 'state', 'ACTIVE', 'lease', ARGV[6])
    addLog(KEYS[3], ARGV[3], ARGV[2], id, 'ACTIVE', f[1], '{}')
    out[#out + 1] = id
    out[#out + 1] = f[1]
    out[#out + 1] = f[2]
    out[#out + 1] = f[3]
  end
end
return out
