/**
 * dlqRetry-4: turns a DLQ entry into a new message (new id, original body) and removes the entry.
 *
 * KEYS[1] dlq  KEYS[2] due  KEYS[3] pending  KEYS[4] log
 * ARGV[1] key prefix  ARGV[2] now  ARGV[3] log cutoff  ARGV[4] dlq id
 * ARGV[5..9] the new message: id, meta JSON, (ignored body placeholder), dueAt, timeout ms
 * Returns 1, or 0 when the entry does not exist. Events: CREATED.
 */
export const DLQ_RETRY = {
  name: "dlqRetry",
  numKeys: 4,
  body: `
local e = ARGV[1] .. 'dlq:' .. ARGV[4]
if redis.call('EXISTS', e) == 0 then return 0 end
local body = redis.call('HGET', e, 'body') or ''
redis.call('DEL', e)
redis.call('ZREM', KEYS[1], ARGV[4])
insertMessage(ARGV[1], KEYS[2], KEYS[3], KEYS[4], ARGV[3], ARGV[2],
  ARGV[5], ARGV[6], body, ARGV[8], ARGV[9])
return 1
`,
} as const;

/**
 * dlqDelete-1: deletes DLQ entries.
 * KEYS[1] dlq  ARGV[1] key prefix  ARGV[2..] dlq ids. Returns the number deleted.
 */
export const DLQ_DELETE = {
  name: "dlqDelete",
  numKeys: 1,
  body: `
local n = 0
for i = 2, #ARGV do
  if redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then n = n + 1 end
  redis.call('DEL', ARGV[1] .. 'dlq:' .. ARGV[i])
end
return n
`,
} as const;
