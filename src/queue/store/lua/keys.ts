/**
 * rotateKeys-1: signing-key rotation (spec 2.10): next becomes current, ARGV[1] becomes next.
 * KEYS[1] signing keys hash. Returns {current, next}.
 */
export const ROTATE_KEYS = {
  name: "rotateKeys",
  numKeys: 1,
  body: `
local nextKey = redis.call('HGET', KEYS[1], 'next')
redis.call('HSET', KEYS[1], 'current', nextKey, 'next', ARGV[1])
return {nextKey, ARGV[1]}
`,
} as const;
