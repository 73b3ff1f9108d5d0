-- FIFO queues (docs/qstash-protocol.md 2.2, 2.5; docs/queue.md, FIFO queues). A queue message waits
-- in the list `qwait:<name>` (not in the due set) until the queue admits it into a slot: admission
-- moves it into the due set at its own due time, from where the ordinary claim takes it. A slot is
-- held from admission until the message is DELIVERED, FAILED or CANCELED, retries included, and
-- then by the callback / failure-callback messages that outcome creates, until they finish too
-- (`qslots:<name>` counts holders per slot). Admission happens inside whichever atomic script frees
-- a slot, adds a message or changes the queue, so the parallelism limit holds across processes
-- without any process-local state.
--
-- queueAdmit: admits waiting messages of queue `name` while it is unpaused and has a free slot;
-- an admitted flow-control message then waits for its key (fcEnter). Every script that admits
-- has now in ARGV[2]. Returns the number admitted.
--@include keys
--@include fc-enter
local function queueAdmit(name, dueKey)
  local f = redis.call('HMGET', Key.queue(name), 'parallelism', 'paused')
  if f[2] == '1' then return 0 end
  local par = tonumber(f[1] or '1')
  local slots = Key.queueSlots(name)
  local wait = Key.queueWait(name)
  local n = 0
  while redis.call('HLEN', slots) < par do
    local id = redis.call('LPOP', wait)
    if not id then return n end
    local h = Key.message(id)
    local due = redis.call('HGET', h, 'qdue')
    if due then
      redis.call('HSET', slots, id, 1)
      redis.call('HSET', h, 'slot', id)
      redis.call('ZADD', dueKey, due, id)
      fcEnter(dueKey, id, redis.call('HGET', h, 'meta'), due, ARGV[2])
      n = n + 1
    end
  end
  return n
end
