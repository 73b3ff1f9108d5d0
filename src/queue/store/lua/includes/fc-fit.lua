-- fcMetasFit(metas, maxKeys): true when the flow-control keys named by `metas` (a list of meta
-- JSON strings, '' = no message), those not yet in `fckeys`, fit beside the partition's keys under
-- `maxKeys` (STASHD_QUEUE_MAX_FLOW_CONTROL_KEYS shared by the partitions). Keys are kept once used,
-- and every GET /v2/flowControl and /metrics scrape reads them all, so a publish, a workflow
-- trigger, step or wait with a key per message must be refused before it stores. Every script
-- that can make a key calls this (or fcKeysFit, includes/fc-room.lua) first.
--@include keys
--@include fc-join
local function fcMetasFit(metas, maxKeys)
  local new, seen = 0, {}
  for _, meta in ipairs(metas) do
    local fc = flowControlOf(meta)
    if fc and not seen[fc.key] then
      seen[fc.key] = true
      if redis.call('SISMEMBER', Key.flowControlKeys, fc.key) == 0 then new = new + 1 end
    end
  end
  return new == 0 or redis.call('SCARD', Key.flowControlKeys) + new <= tonumber(maxKeys)
end
