#!lua
-- array-write: Redis 8.8's array commands for a Redis without them (docs/compatibility.md,
-- "Arrays"). The contract (KEYS, ARGV, reply) is in includes/array.lua; array-read.lua is the
-- same program flagged no-writes, for the read commands.
local READ_ONLY = false
--@include array
