-- enqueue: stores the publishes one store call groups together (group commit: publishes that
-- arrive in the same event-loop turn share one script call, hence one AOF write and fsync). Each
-- publish (1..n messages, n > 1 for URL-group fan-out) is stored with its deduplication key; with
-- a lease token its messages are leased to the publishing process at once (it has free delivery
-- slots), which saves a claim round trip on the publish->delivery path (local hand-off: only
-- messages due by `now` and not held by a flow-control key, as Dispatcher.offer expects).
--
--@keys due pending log active
-- ARGV[1] key prefix  ARGV[2] log cutoff (stream id ms)  ARGV[3] most flow-control keys
-- ARGV[4..] per publish a head of 7, then its messages:
--   now ms, dedup key ('' = none; the key is built with Key.dedup), dedup window ms,
--   publish response JSON kept under the dedup key, lease token ('' = no lease),
--   lease ms (from Redis's TIME; renewed by the holder while the attempt runs), message count;
--   then per message a group of 5: id, meta JSON, body, dueAt ms, timeout ms
-- Returns per publish, in order: {ok, ''} when stored, {duplicate, <stored response>} when its
-- dedup key was already taken (a key taken by an earlier publish of the same call counts),
-- {tooManyFlowControlKeys, ''} when its messages name flow-control keys that do not exist yet and
-- creating them would pass ARGV[3] keys in this partition (nothing of that publish is stored:
-- keys are never forgotten, and each one is read by every GET /v2/flowControl and /metrics).
-- Events: CREATED per message, then ACTIVE when leased. A flow-control message is never leased
-- here: it waits for its key (fcEnter, which may admit it into the due set at once).
--@include codes
--@include keys
--@include store-new
--@include fc-room
local cutoff, maxFcKeys = ARGV[2], ARGV[3]
local keys = {due = KEYS[1], pending = KEYS[2], log = KEYS[3], active = KEYS[4]}
local out = {}

-- Stores the `count` messages starting at ARGV[i]; hands those due by `now` over to the holder
-- of `token` unless ''.
local function store(i, count, now, token, leaseMs)
  for _ = 1, count do
    storeNew(keys, cutoff, now, ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4],
      token, leaseMs)
    i = i + 5
  end
end

local i = 4
while i + 6 <= #ARGV do
  local now, dedup, count = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 6])
  local existing = dedup ~= '' and redis.call('GET', Key.dedup(dedup))
  if existing then
    out[#out + 1] = Code.duplicate
    out[#out + 1] = existing
  elseif not fcKeysFit(i + 7, count, maxFcKeys) then
    out[#out + 1] = Code.tooManyFlowControlKeys
    out[#out + 1] = ''
  else
    if dedup ~= '' then redis.call('SET', Key.dedup(dedup), ARGV[i + 3], 'PX', ARGV[i + 2]) end
    store(i + 7, count, now, ARGV[i + 4], ARGV[i + 5])
    out[#out + 1] = Code.ok
    out[#out + 1] = ''
  end
  i = i + 7 + 5 * count
end
return out
