#!lua
-- json-write: the JSON command group as one script, for a Redis without the JSON module
-- (docs/json.md). Called as `EVALSHA <sha> numkeys keys… json.<cmd> args…` for every command.
-- The read variant, json-read.lua, is the same program flagged no-writes.
-- Returns the command's reply (RedisJSON 2.x shapes), or its error.
local READ_ONLY = false
--@include read-commands
--@include write-commands
--@include edit-commands
--@include dispatch
