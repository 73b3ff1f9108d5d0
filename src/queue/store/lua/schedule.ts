/**
 * Schedule transitions (spec 2.6). A schedule is a hash `<p>sched:<id>` (see store/keys.ts); an
 * unpaused one is also in the `sched-due` zset under its next fire time. The fire itself stores
 * its messages through the ordinary enqueue script (deduplicated per schedule and tick), then
 * advances the schedule with scheduleAdvance, a compare-and-set on `next`: of several processes
 * firing the same tick, exactly one advances it.
 */

/**
 * scheduleSave-3: creates or replaces a schedule (a replacement starts afresh: unpaused, no last
 * fire). A new schedule is refused when ARGV[5] schedules exist already (a replacement never is).
 * KEYS[1] schedule hash  KEYS[2] schedules set  KEYS[3] sched-due zset
 * ARGV[1] id  ARGV[2] def JSON  ARGV[3] body  ARGV[4] next fire ms  ARGV[5] max schedules
 * Returns 1, or 0 when refused (nothing changed).
 */
export const SCHEDULE_SAVE = {
  name: "scheduleSave",
  numKeys: 3,
  body: `
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0
  and redis.call('SCARD', KEYS[2]) >= tonumber(ARGV[5]) then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'def', ARGV[2], 'body', ARGV[3], 'next', ARGV[4], 'last', 0,
  'paused', 0, 'states', '{}', 'error', '')
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
return 1
`,
} as const;

/**
 * scheduleClaim-1: leases up to ARGV[2] due schedules to the calling process, so that processes
 * share the firing instead of all racing for every tick: each claimed entry's score in the due
 * set becomes now + lease (its hash, and `next`, are unchanged). The fire's advance (or a save,
 * pause or delete) replaces that score; a claimer that dies leaves the tick due again once the
 * lease ends, and the fire's dedup key keeps it from being stored twice.
 * KEYS[1] sched-due zset  ARGV[1] now ms  ARGV[2] limit  ARGV[3] lease ms
 * Returns the claimed ids.
 */
export const SCHEDULE_CLAIM = {
  name: "scheduleClaim",
  numKeys: 1,
  body: `
local ids = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, ARGV[2])
local leased = tonumber(ARGV[1]) + tonumber(ARGV[3])
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], leased, id) end
return ids
`,
} as const;

/**
 * scheduleAdvance-2: records a fire of the tick `ARGV[2]` and moves the schedule to its next tick,
 * only if `next` still equals ARGV[2] (another process did not advance it, it was not replaced).
 * A paused or deleted schedule is not put back into the due set.
 * KEYS[1] schedule hash  KEYS[2] sched-due zset
 * ARGV[1] id  ARGV[2] expected next ms  ARGV[3] fire time ms (last)  ARGV[4] new next ms
 * ARGV[5] states JSON  ARGV[6] error ('' when none)
 * Returns 1 advanced, 0 not (lost the race, replaced or deleted).
 */
export const SCHEDULE_ADVANCE = {
  name: "scheduleAdvance",
  numKeys: 2,
  body: `
local f = redis.call('HMGET', KEYS[1], 'next', 'paused')
if f[1] ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'next', ARGV[4], 'last', ARGV[3], 'states', ARGV[5], 'error', ARGV[6])
if f[2] ~= '1' then redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1]) end
return 1
`,
} as const;

/**
 * schedulePause-2: pauses (ARGV[2] = '1') or resumes (ARGV[2] = '0', next fire ARGV[3]) a
 * schedule; idempotent. A resumed schedule starts from the first tick after the resume.
 * KEYS[1] schedule hash  KEYS[2] sched-due zset
 * ARGV[1] id  ARGV[2] paused flag  ARGV[3] next fire ms (resume)
 * Returns 1, or 0 when the schedule does not exist.
 */
export const SCHEDULE_PAUSE = {
  name: "schedulePause",
  numKeys: 2,
  body: `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'paused', 1)
  redis.call('ZREM', KEYS[2], ARGV[1])
elseif redis.call('HGET', KEYS[1], 'paused') == '1' then
  redis.call('HSET', KEYS[1], 'paused', 0, 'next', ARGV[3])
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
end
return 1
`,
} as const;

/**
 * scheduleDelete-3: removes a schedule; messages it already produced stay.
 * KEYS[1] schedule hash  KEYS[2] schedules set  KEYS[3] sched-due zset  ARGV[1] id
 * Returns 1 deleted, 0 when it did not exist.
 */
export const SCHEDULE_DELETE = {
  name: "scheduleDelete",
  numKeys: 3,
  body: `
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return redis.call('DEL', KEYS[1])
`,
} as const;
