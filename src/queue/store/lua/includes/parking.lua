-- parking: the due messages of a destination at its share, set apart so claims can pass them.
--
-- A claim skips due messages whose origin holds its share of the caller's delivery slots, and
-- looks at most so many due entries deep. A destination that holds its slots for long (one that
-- never answers holds each until the attempt's timeout) with more messages due than that depth
-- would hide every message behind them: delayed ones, retries, other destinations'. So when a
-- long claim ends with its whole depth looked at, the entries it skipped for their origin's share
-- (never a FIFO queue's: those stay in order in the due set) move to that origin's parked set,
-- with their due scores (parkDue). The claims after it see past them.
--
-- A parked message is still due: each claim first moves back, oldest first, as many parked
-- entries of each origin as the caller has room for in that origin's share (unparkDue), before it
-- looks at the due set, where their old scores put them at the front. So a process with free
-- slots for the origin (another stashd process, or this one once attempts end) takes them at its
-- next claim. A cancelled message leaves its parked set (parkedRemove); an entry whose message is
-- gone otherwise is dropped by the claim that moves it back.
--
-- Keys: `parked` (declared by the caller) is a hash origin -> number of entries in its parked set
-- (the depth count reads it); Key.parkedDue(origin) is that origin's sorted set id -> due score.
--@include keys
--@include parked-count
-- Moves `entries` ({id, score, ...}, as ZRANGE WITHSCORES gives them) from sorted set `from` to
-- sorted set `to`, keeping their scores; how many.
local function moveScored(from, to, entries)
  local zadd, ids = {}, {}
  for i = 1, #entries, 2 do
    zadd[#zadd + 1] = entries[i + 1]
    zadd[#zadd + 1] = entries[i]
    ids[#ids + 1] = entries[i]
  end
  redis.call('ZADD', to, unpack(zadd))
  redis.call('ZREM', from, unpack(ids))
  return #ids
end

-- Moves due entries to their origins' parked sets. `entries` maps origin -> {id, score, ...}.
local function parkDue(dueKey, parkedKey, entries)
  local n = 0
  for origin, list in pairs(entries) do
    if #list > 0 then
      n = n + moveScored(dueKey, Key.parkedDue(origin), list)
      setParkedCount(parkedKey, origin)
    end
  end
  return n
end

-- Moves back into the due set, for each parked origin, its `room(origin)` oldest entries.
local function unparkDue(dueKey, parkedKey, room)
  for _, origin in ipairs(redis.call('HKEYS', parkedKey)) do
    local take = room(origin)
    if take > 0 then
      local pk = Key.parkedDue(origin)
      local got = redis.call('ZRANGE', pk, 0, take - 1, 'WITHSCORES')
      if #got > 0 then moveScored(pk, dueKey, got) end
      setParkedCount(parkedKey, origin)
    end
  end
end
