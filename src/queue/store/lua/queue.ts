/**
 * FIFO queue transitions (spec 2.2, 2.5). The slot logic (admission, release on finish, cancel
 * and reap) is in queue-includes.ts; these scripts add messages to a queue and change its
 * configuration, each admitting what the change allows.
 */

/**
 * queueEnqueue-5: stores one enqueue (1..n messages, n > 1 for URL-group fan-out) at the tail of
 * queue ARGV[6], creating the queue (parallelism 1, unpaused) on first use unless ARGV[7] queues
 * exist already, atomically with its deduplication key; then admits as many waiting messages as
 * the queue has free slots.
 *
 * KEYS[1] due  KEYS[2] pending  KEYS[3] log  KEYS[4] dedup key (used only when ARGV[4] ~= '0')
 * KEYS[5] queues set
 * ARGV[1] key prefix  ARGV[2] now (ms)  ARGV[3] log cutoff  ARGV[4] dedup window ms
 * ARGV[5] publish response JSON kept under the dedup key  ARGV[6] queue name  ARGV[7] max queues
 * ARGV[8..] groups of 5: id, meta JSON, body, dueAt ms, timeout ms
 * Returns {1, admitted count} when stored; {0, <stored response>} when the dedup key was taken;
 * {-1} (nothing stored) when the queue would be one too many.
 * Events: CREATED per message (admission is not an event; claim logs ACTIVE).
 */
export const QUEUE_ENQUEUE = {
  name: "queueEnqueue",
  numKeys: 5,
  body: `
local prefix, now, cutoff, name = ARGV[1], ARGV[2], ARGV[3], ARGV[6]
if ARGV[4] ~= '0' then
  local existing = redis.call('GET', KEYS[4])
  if existing then return {0, existing} end
end
if not queueEnsure(prefix, KEYS[5], name, now, ARGV[7]) then return {-1} end
if ARGV[4] ~= '0' then redis.call('SET', KEYS[4], ARGV[5], 'PX', ARGV[4]) end
local wait = prefix .. 'qwait:' .. name
for i = 8, #ARGV - 4, 5 do
  local id = ARGV[i]
  insertMessage(prefix, KEYS[1], KEYS[2], KEYS[3], cutoff, now,
    id, ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4])
  redis.call('ZREM', KEYS[1], id)
  redis.call('HSET', prefix .. 'msg:' .. id, 'queue', name, 'qdue', ARGV[i + 3])
  redis.call('RPUSH', wait, id)
end
return {1, queueAdmit(prefix, name, KEYS[1])}
`,
} as const;

/**
 * queueConfig-3: creates or updates a queue (upsert), or pauses / resumes an existing one, then
 * admits what the new configuration allows (a lowered parallelism lets running slots finish).
 *
 * KEYS[1] queue hash  KEYS[2] queues set  KEYS[3] due
 * ARGV[1] key prefix  ARGV[2] now  ARGV[3] queue name  ARGV[4] parallelism ('' = keep)
 * ARGV[5] paused '1' | '0' ('' = keep)  ARGV[6] 'create' to create a missing queue
 * ARGV[7] max queues (a missing queue is not created when that many exist)
 * Returns the number of messages admitted, -1 when the queue is missing and not to be created,
 * -2 when it is missing and would be one too many.
 */
export const QUEUE_CONFIG = {
  name: "queueConfig",
  numKeys: 3,
  body: `
local prefix, now, name = ARGV[1], ARGV[2], ARGV[3]
if redis.call('EXISTS', KEYS[1]) == 0 and ARGV[6] ~= 'create' then return -1 end
if not queueEnsure(prefix, KEYS[2], name, now, ARGV[7]) then return -2 end
redis.call('HSET', KEYS[1], 'updatedAt', now)
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'parallelism', ARGV[4]) end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'paused', ARGV[5]) end
return queueAdmit(prefix, name, KEYS[3])
`,
} as const;

/**
 * queueDelete-5: deletes a queue: its configuration and the messages still waiting for a slot
 * (CANCEL_REQUESTED, CANCELED). Admitted messages finish normally; their slots stay counted in
 * `qslots:<name>` until then (a queue re-created meanwhile sees them as running).
 *
 * KEYS[1] queue hash  KEYS[2] queues set  KEYS[3] queue wait list  KEYS[4] pending  KEYS[5] log
 * ARGV[1] key prefix  ARGV[2] now  ARGV[3] log cutoff  ARGV[4] queue name
 * Returns 1 deleted, 0 when the queue did not exist.
 */
export const QUEUE_DELETE = {
  name: "queueDelete",
  numKeys: 5,
  body: `
local prefix, now, cutoff = ARGV[1], ARGV[2], ARGV[3]
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for _, id in ipairs(redis.call('LRANGE', KEYS[3], 0, -1)) do
  local h = prefix .. 'msg:' .. id
  local meta = redis.call('HGET', h, 'meta')
  if meta then
    redis.call('DEL', h)
    redis.call('ZREM', KEYS[4], id)
    addLog(KEYS[5], cutoff, now, id, 'CANCEL_REQUESTED', meta, '{}')
    addLog(KEYS[5], cutoff, now, id, 'CANCELED', meta, '{}')
  end
end
redis.call('DEL', KEYS[1], KEYS[3])
redis.call('SREM', KEYS[2], ARGV[4])
return 1
`,
} as const;
