-- rotateSigningKeys: signing-key rotation (docs/qstash-protocol.md 2.10): next becomes current,
-- ARGV[1] becomes next.
--
--@keys signingKeys
-- ARGV[1] the new next key
-- Returns {current, next}.
local nextKey = redis.call('HGET', KEYS[1], 'next')
redis.call('HSET', KEYS[1], 'current', nextKey, 'next', ARGV[1])
return {nextKey, ARGV[1]}
