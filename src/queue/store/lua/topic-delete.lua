-- topicDelete: removes a URL group and its name from the set of groups in one step, so a
-- concurrent topicUpdate never sees one without the other.
--
--@keys topic topics
-- ARGV[1] group name
-- Returns 1 when the group existed, 0 otherwise.
local existed = redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return existed
