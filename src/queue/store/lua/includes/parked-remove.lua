-- parkedRemove: takes a cancelled message out of its destination's parked set, if a claim had
-- parked it (includes/parking.lua).
--@include keys
--@include parked-count
-- Takes message `id` (hash h) out of its origin's parked set; whether it was there.
local function parkedRemove(parkedKey, h, id)
  local origin = redis.call('HGET', h, 'origin')
  if not origin or redis.call('ZREM', Key.parkedDue(origin), id) == 0 then return false end
  setParkedCount(parkedKey, origin)
  return true
end
