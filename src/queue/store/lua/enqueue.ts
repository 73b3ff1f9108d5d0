/**
 * enqueue-4: stores one publish (1..n messages, n > 1 for URL-group fan-out), atomically with its
 * deduplication key.
 *
 * KEYS[1] due  KEYS[2] pending  KEYS[3] log  KEYS[4] dedup key (used only when ARGV[4] ~= '0')
 * ARGV[1] key prefix  ARGV[2] now (ms)  ARGV[3] log cutoff (stream id ms)  ARGV[4] dedup window ms
 * ARGV[5] publish response JSON kept under the dedup key
 * ARGV[6..] groups of 5: id, meta JSON, body, dueAt ms, timeout ms
 * Returns {1} when stored; {0, <stored response>} when the dedup key was already taken.
 * Events: CREATED per message.
 */
export const ENQUEUE = {
  name: "enqueue",
  numKeys: 4,
  body: `
if ARGV[4] ~= '0' then
  local existing = redis.call('GET', KEYS[4])
  if existing then return {0, existing} end
  redis.call('SET', KEYS[4], ARGV[5], 'PX', ARGV[4])
end
insertFrom(6, ARGV[1], KEYS[1], KEYS[2], KEYS[3], ARGV[3], ARGV[2])
return {1}
`,
} as const;
