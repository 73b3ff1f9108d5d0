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
}
function Key.message(id) return PREFIX .. 'msg:' .. id end
function Key.dlqEntry(id) return PREFIX .. 'dlq:' .. id end
function Key.dedup(key) return PREFIX .. 'dedup:' .. key end
function Key.queue(name) return PREFIX .. 'queue:' .. name end
function Key.queueWait(name) return PREFIX .. 'qwait:' .. name end
function Key.queueSlots(name) return PREFIX .. 'qslots:' .. name end
function Key.flowControl(key) return PREFIX .. 'fc:' .. key end
function Key.flowControlWait(key) return PREFIX .. 'fcwait:' .. key end
