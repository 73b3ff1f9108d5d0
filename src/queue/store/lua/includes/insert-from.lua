-- insertFrom: inserts the messages given as (id, meta, body, dueAt, tmo) groups from
-- ARGV[first] on.
--@include insert-message
local function insertFrom(first, dueKey, pendingKey, logKey, cutoff, now)
  local i = first
  while i + 4 <= #ARGV do
    insertMessage(dueKey, pendingKey, logKey, cutoff, now,
      ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4])
    i = i + 5
  end
end
