-- claim: takes up to ARGV[4] due messages and leases them to the caller, skipping those whose
-- destination already holds its share of the caller's delivery slots. A skipped message stays in
-- the due set where it was (nothing is lost or reordered); a later message of the same FIFO queue
-- is skipped with it, so a queue's messages still start in order.
--
--@keys due active log
-- ARGV[1] key prefix  ARGV[2] now  ARGV[3] log cutoff  ARGV[4] limit  ARGV[5] lease ms (from
-- Redis's TIME; renewed by the holder while the attempt runs, see renew)  ARGV[6] lease token
-- ARGV[7] most attempts per destination origin (0 = no limit)  ARGV[8] most due entries looked at
-- ARGV[9..] pairs of origin, attempts the caller has in flight to it
-- Returns {skipped count, then (id, meta, body, retried) per claimed message}.
-- Events: ACTIVE. Ids whose hash is gone (cancelled meanwhile) are dropped.
--
-- The origin is read from the meta's `url` (scheme://authority, ASCII-lowercased) exactly as
-- delivery/destination-share.ts `originOf` computes it; `url` is the first string field of that
-- name in the meta JSON (domain/build.ts writes it before the headers).
--@include keys
--@include lease-deadline
--@include add-log
local now, limit = tonumber(ARGV[2]), tonumber(ARGV[4])
local cap, scanMax = tonumber(ARGV[7]), tonumber(ARGV[8])
local used = {}
for i = 9, #ARGV - 1, 2 do used[ARGV[i]] = tonumber(ARGV[i + 1]) end

local function originOf(meta)
  local url = string.match(meta, '"url":"(.-)"') or ''
  return string.lower(string.match(url, '^%a[%w+.-]*://[^/?#]*') or url)
end

local blockedQueues = {}
local out = {0}
local claimed, skipped, scanned = 0, 0, 0

-- Leases one message: out of due, into active under the caller's token.
local function lease(id, h, f)
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZADD', KEYS[2], leaseDeadline(ARGV[5]), id)
  redis.call('HSET', h, 'state', 'ACTIVE', 'lease', ARGV[6])
  addLog(KEYS[3], ARGV[3], ARGV[2], id, 'ACTIVE', f[1], '{}')
  out[#out + 1] = id
  out[#out + 1] = f[1]
  out[#out + 1] = f[2]
  out[#out + 1] = f[3]
end

while claimed < limit and scanned < scanMax do
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', skipped, limit - claimed)
  if #ids == 0 then break end
  for _, id in ipairs(ids) do
    scanned = scanned + 1
    local h = Key.message(id)
    local f = redis.call('HMGET', h, 'meta', 'body', 'retried', 'queue')
    if not f[1] then
      redis.call('ZREM', KEYS[1], id)
    else
      local origin = originOf(f[1])
      local n = used[origin] or 0
      if (cap > 0 and n >= cap) or (f[4] and blockedQueues[f[4]]) then
        skipped = skipped + 1
        if f[4] then blockedQueues[f[4]] = true end
      else
        used[origin] = n + 1
        lease(id, h, f)
        claimed = claimed + 1
      end
    end
  end
end
out[1] = skipped
return out
