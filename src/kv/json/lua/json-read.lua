#!lua flags=no-writes
-- json-read: the read variant of json-write.lua, for the read commands only. Flagged no-writes,
-- so it runs with EVALSHA_RO / EVAL_RO and the read-only token's ACL user may call it; it also
-- refuses every write command itself.
local READ_ONLY = true
--@include read-commands
--@include write-commands
--@include edit-commands
--@include dispatch
