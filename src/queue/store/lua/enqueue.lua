-- enqueue: stores one publish (1..n messages, n > 1 for URL-group fan-out), atomically with its
-- deduplication key; optionally leases the messages to the publishing process at once (it has
-- free delivery slots), which saves a claim round trip on the publish->delivery path.
--
--@keys due pending log dedup active
-- (dedup is used only when ARGV[4] ~= '0')
-- ARGV[1] key prefix  ARGV[2] now (ms)  ARGV[3] log cutoff (stream id ms)  ARGV[4] dedup window ms
-- ARGV[5] publish response JSON kept under the dedup key  ARGV[6] lease token ('' = no lease)
-- ARGV[7] lease ms (from Redis's TIME; renewed by the holder while the attempt runs)
-- ARGV[8..] groups of 5: id, meta JSON, body, dueAt ms, timeout ms
-- Returns {ok} when stored; {duplicate, <stored response>} when the dedup key was already taken.
-- Events: CREATED per message, then ACTIVE when leased. A flow-control message is never leased
-- here: it waits for its key (fcEnter, which may admit it into the due set at once).
--@include codes
--@include keys
--@include lease-deadline
--@include add-log
--@include insert-message
--@include fc-enter
if ARGV[4] ~= '0' then
  local existing = redis.call('GET', KEYS[4])
  if existing then return {Code.duplicate, existing} end
  redis.call('SET', KEYS[4], ARGV[5], 'PX', ARGV[4])
end
local now, cutoff, token = ARGV[2], ARGV[3], ARGV[6]
local i = 8
while i + 4 <= #ARGV do
  local id, meta, tmo = ARGV[i], ARGV[i + 1], ARGV[i + 4]
  insertMessage(KEYS[1], KEYS[2], KEYS[3], cutoff, now, id, meta, ARGV[i + 2], ARGV[i + 3], tmo)
  local waits = fcEnter(KEYS[1], id, meta, ARGV[i + 3], now)
  if token ~= '' and not waits then
    redis.call('ZREM', KEYS[1], id)
    redis.call('ZADD', KEYS[5], leaseDeadline(ARGV[7]), id)
    redis.call('HSET', Key.message(id), 'state', 'ACTIVE', 'lease', token)
    addLog(KEYS[3], cutoff, now, id, 'ACTIVE', meta, '{}')
  end
  i = i + 5
end
return {Code.ok}
