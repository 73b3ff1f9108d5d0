#!lua flags=no-writes
-- array-read: the read variant of array-write.lua, for the array read commands only. Flagged
-- no-writes, so it runs with EVALSHA_RO and the read-only token's ACL user may call it.
local READ_ONLY = true
--@include array
