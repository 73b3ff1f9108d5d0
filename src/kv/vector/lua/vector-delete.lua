#!lua flags=allow-oom
-- vector-delete: VECTOR.DEL and VECTOR.DROP of vector-write.lua only, flagged allow-oom so that a
-- database over its max data size (maxmemory under noeviction) can still delete vectors to make
-- room, as Redis lets a plain DEL or HDEL (commands.ts picks it for those two). It refuses every
-- other operation. What it writes besides the deletion is one change-log entry per VECTOR.DEL,
-- in a stream trimmed to its length (about 50 bytes against the DIM x 4 freed).
--
--@keys index log
-- KEYS, ARGV and replies as in vector-write.lua, for `del` and `drop`.
if ARGV[1] ~= 'del' and ARGV[1] ~= 'drop' then
  return redis.error_reply('ERR vector-delete runs del or drop only')
end
--@include vector-ops
