-- keys: the names of the queue keys a script builds itself, because their ids are known only
-- inside the script (a message id read from a list, a queue name from a message hash) or their
-- number varies (the dedup keys of a group-committed enqueue). Every other key is passed in
-- KEYS. The layout is src/queue/store/keys.ts's, under the same names;
-- test/queue/lua-contracts.test.ts checks both build the same keys. A script including this file
-- takes the key prefix (with its hash tag, so every name stays in the script's cluster slot) in
-- ARGV[1].
local PREFIX = ARGV[1]
local Key = {
  flowControlKeys = PREFIX .. 'fckeys',
  flowControlWake = PREFIX .. 'fcwake',
  slotProbe = PREFIX .. 'slot-probe',
}
function Key.message(id) return PREFIX .. 'msg:' .. id end
function Key.messageLog(id) return PREFIX .. 'msglog:' .. id end
function Key.dlqEntry(id) return PREFIX .. 'dlq:' .. id end
function Key.dedup(key) return PREFIX .. 'dedup:' .. key end
function Key.queue(name) return PREFIX .. 'queue:' .. name end
function Key.queueWait(name) return PREFIX .. 'qwait:' .. name end
function Key.queueSlots(name) return PREFIX .. 'qslots:' .. name end
function Key.flowControl(key) return PREFIX .. 'fc:' .. key end
function Key.flowControlWait(key) return PREFIX .. 'fcwait:' .. key end
function Key.parkedDue(origin) return PREFIX .. 'parked:' .. origin end

-- Slot guard. Redis checks before a script runs that its KEYS are on this node, but not the keys
-- built here. While the slot is migrating to another master (resharding), such a key may already
-- be on the other node; touching it would fail mid-script and keep the writes made before. So a
-- script building keys first touches `slotProbe`, a key that never exists: on a migrating slot
-- Redis refuses that (a missing key there is asked for on the importing node), and the script
-- stops before any write with a TRYAGAIN error, which the client retries until the migration has
-- ended (docs/scaling.md, The queue on a Redis Cluster). On a stable slot it costs one lookup.
if type(redis.pcall('EXISTS', Key.slotProbe)) == 'table' then
  return redis.error_reply('TRYAGAIN the queue slot is being migrated')
end
