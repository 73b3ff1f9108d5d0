-- renew: extends the leases a process still holds (its deliveries are running), so a lease can
-- be short (a crashed process's messages come back within one lease) while an attempt may run as
-- long as its timeout.
--
--@keys active
-- ARGV[1] key prefix  ARGV[2] lease ms (the new deadline is Redis's TIME + lease)
-- ARGV[3..] pairs of message id, lease token
-- Returns the ids whose lease is lost (reaped, maybe claimed by another process, or the message
-- is gone): their holder must abandon the attempt. The others are extended.
--@include keys
--@include lease-deadline
local lost = {}
local deadline = leaseDeadline(ARGV[2])
for i = 3, #ARGV - 1, 2 do
  local id = ARGV[i]
  if redis.call('HGET', Key.message(id), 'lease') == ARGV[i + 1] then
    redis.call('ZADD', KEYS[1], 'XX', deadline, id)
  else
    lost[#lost + 1] = id
  end
end
return lost
