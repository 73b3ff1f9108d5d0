#!lua flags=no-writes
-- hash-read: the read variant of hash-write.lua, for read commands only. Flagged no-writes, so
-- it runs with EVALSHA_RO and the read-only token's ACL user may call it; expired fields are
-- filtered out of its replies rather than deleted.
local READ_ONLY = true
--@include hash
