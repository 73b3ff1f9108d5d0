-- queueDrain: one bounded step of a queue deletion (see queue-delete.lua): cancels up to ARGV[4]
-- of the messages left in drain list KEYS[1], oldest first.
--
--@keys queueDrain pending log queueDrains
-- ARGV[1] key prefix  ARGV[2] now  ARGV[3] log cutoff  ARGV[4] most messages to cancel
-- Returns the number of messages left in the list (0: done, the list is gone).
-- Events: CANCEL_REQUESTED, CANCELED per message.
--@include keys
--@include queue-drain
return drainQueue(KEYS[1], KEYS[4], KEYS[2], KEYS[3], ARGV[3], ARGV[2], ARGV[4])
