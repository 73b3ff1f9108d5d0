#!lua flags=allow-oom
-- json-delete: JSON.DEL and JSON.FORGET of json-write.lua only, flagged allow-oom so that a
-- database over its max data size (maxmemory under noeviction) can still delete parts of its
-- documents to make room, as Redis lets a plain DEL (route.ts picks it for those two commands).
-- It refuses every other command, so the flag lets no write through that grows memory: a path
-- deleted leaves the document shorter (re-encoded the way json-write.lua encodes it), `$`
-- deletes the key. Called and answering as json-write.lua (its header has the contract).
if ARGV[1] ~= 'json.del' and ARGV[1] ~= 'json.forget' then
  return redis.error_reply('ERR json-delete runs JSON.DEL or JSON.FORGET only')
end
local READ_ONLY = false
--@include read-commands
--@include write-commands
--@include edit-commands
--@include dispatch
