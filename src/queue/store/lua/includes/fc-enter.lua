-- fcEnter: stored message (id, meta) due at dueAt enters its flow-control key's wait list
-- (leaving the due set) and the key admits (fcJoin). Returns false (no-op) when the message has
-- no flow control.
--@include fc-join
local function fcEnter(dueKey, id, meta, dueAt, now)
  local fc = flowControlOf(meta)
  if not fc then return false end
  return fcJoin(dueKey, id, fc, dueAt, now)
end
