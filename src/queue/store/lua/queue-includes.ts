/**
 * Lua helpers for FIFO queues (spec 2.2, 2.5), prepended to every queue script with LUA_INCLUDES.
 *
 * A queue message waits in the list `qwait:<name>` (not in the due set) until the queue admits it
 * into a slot: admission moves it into the due set at its own due time, from where the ordinary
 * claim takes it. A slot is held from admission until the message is DELIVERED, FAILED or
 * CANCELED, retries included, and then by the callback / failure-callback messages that outcome
 * creates, until they finish too (`qslots:<name>` counts holders per slot). Admission happens
 * inside whichever atomic script frees a slot, adds a message or changes the queue, so the
 * parallelism limit holds across processes without any process-local state.
 */
export const QUEUE_INCLUDES = `
-- Admits waiting messages of queue \`name\` while it is unpaused and has a free slot; an admitted
-- flow-control message then waits for its key (fcEnter). Every script that admits has now in
-- ARGV[2]. Returns the number admitted.
local function queueAdmit(prefix, name, dueKey)
  local f = redis.call('HMGET', prefix .. 'queue:' .. name, 'parallelism', 'paused')
  if f[2] == '1' then return 0 end
  local par = tonumber(f[1] or '1')
  local slots = prefix .. 'qslots:' .. name
  local wait = prefix .. 'qwait:' .. name
  local n = 0
  while redis.call('HLEN', slots) < par do
    local id = redis.call('LPOP', wait)
    if not id then return n end
    local h = prefix .. 'msg:' .. id
    local due = redis.call('HGET', h, 'qdue')
    if due then
      redis.call('HSET', slots, id, 1)
      redis.call('HSET', h, 'slot', id)
      redis.call('ZADD', dueKey, due, id)
      fcEnter(prefix, dueKey, id, redis.call('HGET', h, 'meta'), due, ARGV[2])
      n = n + 1
    end
  end
  return n
end

-- Message hash h hands its queue slot on to the new messages ARGV[first..] (groups of 5 as in
-- enqueue: its callbacks, which the queue's next message waits for); with \`done\` h's own hold
-- ends. When no holder is left the slot is free and the queue admits. No-op outside a slot.
local function queueRelease(prefix, h, dueKey, first, done)
  local f = redis.call('HMGET', h, 'queue', 'slot')
  if not f[2] then return 0 end
  local n = 0
  for i = first, #ARGV - 4, 5 do
    redis.call('HSET', prefix .. 'msg:' .. ARGV[i], 'queue', f[1], 'slot', f[2])
    n = n + 1
  end
  if done then n = n - 1 end
  local slots = prefix .. 'qslots:' .. f[1]
  if redis.call('HINCRBY', slots, f[2], n) > 0 then return 0 end
  redis.call('HDEL', slots, f[2])
  return queueAdmit(prefix, f[1], dueKey)
end

-- A waiting or admitted queue message (h, id) is removed: leaves the wait list or frees its slot.
local function queueForget(prefix, h, id, dueKey)
  local f = redis.call('HMGET', h, 'queue', 'slot')
  if f[2] then return queueRelease(prefix, h, dueKey, #ARGV + 1, true) end
  if f[1] then redis.call('LREM', prefix .. 'qwait:' .. f[1], 1, id) end
  return 0
end

-- Creates queue \`name\` with the defaults (parallelism 1, unpaused) unless it exists. Returns
-- false (creating nothing) when it does not exist and \`maxQueues\` queues exist already.
local function queueEnsure(prefix, setKey, name, now, maxQueues)
  local q = prefix .. 'queue:' .. name
  if redis.call('EXISTS', q) == 1 then return true end
  if redis.call('SCARD', setKey) >= tonumber(maxQueues) then return false end
  redis.call('HSET', q, 'createdAt', now, 'parallelism', 1, 'paused', 0, 'updatedAt', now)
  redis.call('SADD', setKey, name)
  return true
end
`;
