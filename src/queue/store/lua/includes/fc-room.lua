-- fcKeysFit(from, count, maxKeys): true when the flow-control keys named by the `count` messages
-- whose groups of 5 ARGV (id, meta, body, dueAt, timeout) start at ARGV[from], those not yet
-- in `fckeys`, fit beside the partition's keys under `maxKeys` (STASHD_QUEUE_MAX_FLOW_CONTROL_KEYS
-- shared by the partitions). Keys are kept once used, and every GET /v2/flowControl and /metrics
-- scrape reads them all, so a publish with a key per message must be refused before it stores.
--@include keys
--@include fc-join
local function fcKeysFit(from, count, maxKeys)
  local new, seen, i = 0, {}, from
  for _ = 1, count do
    local fc = flowControlOf(ARGV[i + 1])
    if fc and not seen[fc.key] then
      seen[fc.key] = true
      if redis.call('SISMEMBER', Key.flowControlKeys, fc.key) == 0 then new = new + 1 end
    end
    i = i + 5
  end
  return new == 0 or redis.call('SCARD', Key.flowControlKeys) + new <= tonumber(maxKeys)
end
