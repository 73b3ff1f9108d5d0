-- leaseDeadline: when a lease taken or renewed now ends (ms), on Redis's own clock (TIME), so
-- that processes on hosts whose clocks disagree never reap a lease another process still holds.
-- TIME is read once per script call: the leases one call takes (a claim's batch, a group-committed
-- enqueue's hand-offs) share the call's start as "now", at most the script's run time early.
local leaseClockMs
local function leaseDeadline(leaseMs)
  if not leaseClockMs then
    local t = redis.call('TIME')
    leaseClockMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return leaseClockMs + tonumber(leaseMs)
end
