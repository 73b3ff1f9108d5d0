-- parkedCount: keeps the `parked` hash (origin -> entries in its parked set) right after a
-- change of one origin's parked set (see includes/parking.lua for what parking is).
--@include keys
local function setParkedCount(parkedKey, origin)
  local n = redis.call('ZCARD', Key.parkedDue(origin))
  if n == 0 then
    redis.call('HDEL', parkedKey, origin)
  else
    redis.call('HSET', parkedKey, origin, n)
  end
end

