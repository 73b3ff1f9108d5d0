#!lua
-- hash-write: hash-field expiration, HGETEX/HSETEX/HGETDEL and the hash and key commands that
-- must respect field TTLs, for a Redis without them (docs/compatibility.md). The contract (KEYS,
-- ARGV, reply) is in includes/hash.lua; hash-read.lua is the same program flagged no-writes.
local READ_ONLY = false
--@include hash
