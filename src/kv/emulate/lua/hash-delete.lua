#!lua flags=allow-oom
-- hash-delete: the commands of hash-write.lua that only delete (DEL, UNLINK, HDEL), for a Redis
-- without hash-field expiration (hash-route.ts). Flagged allow-oom so that a database over its
-- memory limit (maxmemory under noeviction) can still delete to make room, as Redis lets a plain
-- DEL or HDEL; it refuses every other command, so the flag lets no write through that could grow
-- memory (what they run besides the deletion is HDEL and DEL of expired fields and companions).
-- The contract (KEYS, ARGV, reply) is in includes/hash.lua.
local FREES = { del = true, unlink = true, hdel = true, ['+hdel'] = true }
if not FREES[ARGV[1]] then
  return redis.error_reply('ERR hash-delete runs DEL, UNLINK or HDEL only')
end
local READ_ONLY = false
--@include hash
