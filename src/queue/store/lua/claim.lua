-- claim: takes up to ARGV[4] due messages and leases them to the caller, skipping those whose
-- destination already holds its share of the caller's delivery slots. A skipped message stays in
-- the due set where it was (nothing is lost or reordered); a later message of the same FIFO queue
-- is skipped with it, so a queue's messages still start in order.
--
--@keys due active log dueRoutes parked
-- ARGV[1] key prefix  ARGV[2] now  ARGV[3] log cutoff  ARGV[4] limit  ARGV[5] lease ms (from
-- Redis's TIME; renewed by the holder while the attempt runs, see renew)  ARGV[6] lease token
-- ARGV[7] most attempts per destination origin (0 = no limit)  ARGV[8] most due entries looked at
-- ARGV[9] '1': a claim that looked at all ARGV[8] entries parks those it skipped for their
-- origin's share (includes/parking.lua); '0': never parks (short scans)
-- ARGV[10..] pairs of origin, attempts the caller has in flight to it
-- Returns {skipped count, {origins skipped because they held their share}, deepest (how many due
-- entries the claim had looked at when it leased its last message, 0 when it leased none),
-- parked (entries it set apart), then (id, meta, body, retried) per claimed message}. The caller
-- uses `deepest` to see whether a shorter scan would have done (delivery/claim-depth.ts), and
-- claims again at once after a claim that parked.
-- Before it looks at the due set, the claim moves back the parked entries of each origin the
-- caller has room for (unparkDue), so they are taken first.
-- Events: ACTIVE. Ids whose hash is gone (cancelled meanwhile) are dropped.
--
-- A message's route is its origin (its hash's `origin` field, which insertMessage writes; a
-- message stored before that field existed has it computed from its meta) and its FIFO queue
-- (`queue`): all a claim needs to skip it, so a skip never reads its meta or body.
--
-- Route cache. The routes of due messages a claim skipped are kept in the hash KEYS[4]
-- (dueRoutes: message id -> route), so the next claims read a whole range of due entries' routes
-- with one HMGET instead of one hash read per entry (a backlog behind a destination at its share
-- is walked by every claim; the per-entry reads were most of its commands). A message's route
-- never changes while it can be due (its url is in its meta; `queue` is set before it enters
-- the due set) and ids are never reused, so an entry stays right for as long as its message
-- exists. A claim writes the routes it read of the messages it skipped and deletes those of the
-- messages it leased or found gone; entries of messages that left the due set some other way
-- (cancelled, moved to a wait list) stay until the hash expires, ROUTES_TTL_MS after it was
-- created (then the next claims read and cache again), so it never grows without bound.
-- Its writes are not propagated (redis.set_repl): they cost the AOF's appends and fsyncs and the
-- replication stream nothing. A snapshot of the master's memory (an AOF rewrite, a replica's full
-- sync) may copy the hash with its expiry; what it holds is still right there, since routes
-- never change, and the master's expiry deletes the copies too.
--@include keys
--@include lease-message
--@include origin
--@include parking
local now, limit = tonumber(ARGV[2]), tonumber(ARGV[4])
local cap, scanMax = tonumber(ARGV[7]), tonumber(ARGV[8])
local mayPark = ARGV[9] == '1'
-- Due entries read per range call while skipping: fewer calls, each walking the skipped prefix.
local CHUNK = 128
local ROUTES_TTL_MS = 60000
local used = {}
for i = 10, #ARGV - 1, 2 do used[ARGV[i]] = tonumber(ARGV[i + 1]) end

-- The caller's room in an origin's share (all of the claim without a share).
local function room(origin)
  if cap == 0 then return limit end
  return math.min(limit, cap - (used[origin] or 0))
end
unparkDue(KEYS[1], KEYS[5], room)

-- A route as cached: '<#queue>:<queue><origin>', or ':<origin>' outside a FIFO queue (a length
-- prefix, so neither name needs escaping).
local function encodeRoute(origin, queue)
  if not queue then return ':' .. origin end
  return #queue .. ':' .. queue .. origin
end

local function decodeRoute(route)
  local colon = string.find(route, ':', 1, true)
  local n = tonumber(string.sub(route, 1, colon - 1))
  if not n then return string.sub(route, colon + 1), nil end
  return string.sub(route, colon + 1 + n), string.sub(route, colon + 1, colon + n)
end

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
local out = {0, atShareList, 0, 0}
local claimed, skipped, scanned = 0, 0, 0
-- Entries skipped for their origin's share, outside FIFO queues: origin -> {id, score, ...}.
local parkable = {}
-- Cache changes: routes read of skipped messages (field, value, ...), ids no longer due.
local newRoutes, goneRoutes = {}, {}
local cachedAny = false

-- Leases one message: out of due, into active under the caller's token. False when its hash is
-- gone (the entry is dropped from the due set).
local function lease(id, h)
  local f = redis.call('HMGET', h, 'meta', 'body', 'retried')
  if not f[1] then
    redis.call('ZREM', KEYS[1], id)
    return false
  end
  leaseMessage(KEYS[1], KEYS[2], KEYS[3], ARGV[3], ARGV[2], id, f[1], ARGV[6], ARGV[5])
  out[#out + 1] = id
  out[#out + 1] = f[1]
  out[#out + 1] = f[2]
  out[#out + 1] = f[3]
  return true
end

-- Looks at one due entry (due at `score`), its cached route or false: dropped, skipped or leased.
local function visit(id, score, route)
  local h = Key.message(id)
  local origin, queue
  if route then
    origin, queue = decodeRoute(route)
  else
    origin, queue = routeOf(h)
    if not origin then
      redis.call('ZREM', KEYS[1], id)
      return
    end
  end
  local n = used[origin] or 0
  local full = cap > 0 and n >= cap
  if full or (queue and blockedQueues[queue]) then
    skipped = skipped + 1
    if queue then blockedQueues[queue] = true end
    if full and not atShare[origin] then
      atShare[origin] = true
      atShareList[#atShareList + 1] = origin
      parkable[origin] = {}
    end
    if full and not queue then
      local list = parkable[origin]
      list[#list + 1] = id
      list[#list + 1] = score
    end
    if not route then
      newRoutes[#newRoutes + 1] = id
      newRoutes[#newRoutes + 1] = encodeRoute(origin, queue)
    end
    return
  end
  if route then goneRoutes[#goneRoutes + 1] = id end
  if lease(id, h) then
    used[origin] = n + 1
    claimed = claimed + 1
    out[3] = scanned
  end
end

while claimed < limit and scanned < scanMax do
  local want = math.min(scanMax - scanned, math.max(limit - claimed, CHUNK))
  local got = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', skipped,
    want)
  if #got == 0 then break end
  local ids = {}
  for i = 1, #got, 2 do ids[#ids + 1] = got[i] end
  local routes = redis.call('HMGET', KEYS[4], unpack(ids))
  for i, id in ipairs(ids) do
    if claimed >= limit or scanned >= scanMax then break end
    scanned = scanned + 1
    visit(id, got[2 * i], routes[i])
  end
  if #newRoutes > 0 then
    redis.set_repl(redis.REPL_NONE)
    redis.call('HSET', KEYS[4], unpack(newRoutes))
    redis.set_repl(redis.REPL_ALL)
    newRoutes = {}
    cachedAny = true
  end
end
redis.set_repl(redis.REPL_NONE)
if cachedAny then redis.call('PEXPIRE', KEYS[4], ROUTES_TTL_MS, 'NX') end
if #goneRoutes > 0 then redis.call('HDEL', KEYS[4], unpack(goneRoutes)) end
redis.set_repl(redis.REPL_ALL)
if mayPark and scanned >= scanMax then
  local n = parkDue(KEYS[1], KEYS[5], parkable)
  out[4] = n
end
out[1] = skipped
return out
