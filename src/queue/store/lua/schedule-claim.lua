-- scheduleClaim: leases up to ARGV[2] due schedules to the calling process, so that processes
-- share the firing instead of all racing for every tick: each claimed entry's score in the due
-- set becomes now + lease (its hash, and `next`, are unchanged). The fire's advance (or a save,
-- pause or delete) replaces that score; a claimer that dies leaves the tick due again once the
-- lease ends, and the fire's dedup key keeps it from being stored twice.
--
--@keys scheduleDue
-- ARGV[1] now ms  ARGV[2] limit  ARGV[3] lease ms
-- Returns the claimed ids.
local ids = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, ARGV[2])
local leased = tonumber(ARGV[1]) + tonumber(ARGV[3])
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], leased, id) end
return ids
