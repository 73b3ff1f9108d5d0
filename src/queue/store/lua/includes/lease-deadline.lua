-- leaseDeadline: when a lease taken or renewed now ends (ms), on Redis's own clock (TIME), so
-- that processes on hosts whose clocks disagree never reap a lease another process still holds.
local function leaseDeadline(leaseMs)
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(leaseMs)
end
