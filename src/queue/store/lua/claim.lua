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
-- Returns {skipped count, {origins skipped because they held their share}, deepest (how many due
-- entries the claim had looked at when it leased its last message, 0 when it leased none), then
-- (id, meta, body, retried) per claimed message}. The caller uses `deepest` to see whether a
-- shorter scan would have done (delivery/claim-depth.ts).
-- Events: ACTIVE. Ids whose hash is gone (cancelled meanwhile) are dropped.
--
-- A message's origin is its hash's `origin` field (insertMessage writes it); a message stored
-- before that field existed has it computed from its meta. Deciding costs two short fields, so
-- skipping a message never reads its meta or body.
--@include keys
--@include lease-message
--@include origin
local now, limit = tonumber(ARGV[2]), tonumber(ARGV[4])
local cap, scanMax = tonumber(ARGV[7]), tonumber(ARGV[8])
-- Due entries read per range call while skipping: fewer calls, each walking the skipped prefix.
local CHUNK = 128
local used = {}
for i = 9, #ARGV - 1, 2 do used[ARGV[i]] = tonumber(ARGV[i + 1]) end

-- The origin and FIFO queue of message hash h; no origin when the message is gone.
local function routeOf(h)
  local f = redis.call('HMGET', h, 'origin', 'queue')
  if f[1] then return f[1], f[2] end
  local meta = redis.call('HGET', h, 'meta')
  if not meta then return nil end
  return metaOrigin(meta), f[2]
end

local blockedQueues = {}
local atShare, atShareList = {}, {}
local out = {0, atShareList, 0}
local claimed, skipped, scanned = 0, 0, 0

-- Leases one message: out of due, into active under the caller's token.
local function lease(id, h)
  local f = redis.call('HMGET', h, 'meta', 'body', 'retried')
  leaseMessage(KEYS[1], KEYS[2], KEYS[3], ARGV[3], ARGV[2], id, f[1], ARGV[6], ARGV[5])
  out[#out + 1] = id
  out[#out + 1] = f[1]
  out[#out + 1] = f[2]
  out[#out + 1] = f[3]
end

-- Looks at one due entry: dropped, skipped or leased.
local function visit(id)
  local h = Key.message(id)
  local origin, queue = routeOf(h)
  if not origin then
    redis.call('ZREM', KEYS[1], id)
    return
  end
  local n = used[origin] or 0
  local full = cap > 0 and n >= cap
  if full or (queue and blockedQueues[queue]) then
    skipped = skipped + 1
    if queue then blockedQueues[queue] = true end
    if full and not atShare[origin] then
      atShare[origin] = true
      atShareList[#atShareList + 1] = origin
    end
  else
    used[origin] = n + 1
    lease(id, h)
    claimed = claimed + 1
    out[3] = scanned
  end
end

while claimed < limit and scanned < scanMax do
  local want = math.min(scanMax - scanned, math.max(limit - claimed, CHUNK))
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', skipped, want)
  if #ids == 0 then break end
  for _, id in ipairs(ids) do
    if claimed >= limit or scanned >= scanMax then break end
    scanned = scanned + 1
    visit(id)
  end
end
out[1] = skipped
return out
