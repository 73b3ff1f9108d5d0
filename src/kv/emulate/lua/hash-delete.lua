#!lua flags=allow-oom
-- hash-delete: DEL and UNLINK for a Redis without hash-field expiration, where each key may have
-- a field-TTL companion (hash-route.ts). Flagged allow-oom so that a database at its memory
-- limit (maxmemory under noeviction) can still delete to make room, as Redis lets a plain DEL;
-- it runs nothing but DEL or UNLINK, so the flag lets no write through that could grow memory.
--
-- KEYS     every key named, each followed by its companion
-- ARGV[1]  'del' or 'unlink'
-- Returns  the number of keys deleted, companions not counted.
local cmd = ARGV[1]
if cmd ~= 'del' and cmd ~= 'unlink' then
  return redis.error_reply('ERR hash-delete runs DEL or UNLINK only')
end
--@include delete-with-companions
return delete_with_companions(cmd)
