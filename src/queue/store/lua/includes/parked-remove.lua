-- parkedRemove: takes a cancelled message out of its destination's parked set, if a claim had
-- parked it (includes/parking.lua).
--@include keys
--@include parked-count
--@include origin
-- Takes message `id` (hash h) out of its origin's parked set; whether it was there.
local function parkedRemove(parkedKey, h, id)
  -- As the claim found it: a message stored before the `origin` field has it from its meta.
  local f = redis.call('HMGET', h, 'origin', 'meta')
  local origin = f[1] or metaOrigin(f[2] or '')
  if redis.call('ZREM', Key.parkedDue(origin), id) == 0 then return false end
  setParkedCount(parkedKey, origin)
  return true
end
