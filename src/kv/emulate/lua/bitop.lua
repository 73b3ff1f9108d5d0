#!lua
-- bitop: BITOP DIFF | DIFF1 | ANDOR | ONE on a Redis older than 8.2 (docs/compatibility.md).
--
-- KEYS[1]  the destination; KEYS[2..] the source keys (at least one; two for all but ONE)
-- ARGV[1]  the operation, lower-case: diff, diff1, andor or one
-- Returns  the length of the string stored at the destination (deleted when that is 0).
--   DIFF   X and not (Y1 or Y2 …)     DIFF1  (Y1 or Y2 …) and not X
--   ANDOR  X and (Y1 or Y2 …)         ONE    bits set in exactly one source
local op = ARGV[1]
if op ~= 'one' and #KEYS < 3 then
  return redis.error_reply(
    'ERR BITOP ' .. string.upper(op) .. ' must be called with at least two source keys.'
  )
end
local sources, width = {}, 0
for i = 2, #KEYS do
  local t = redis.call('TYPE', KEYS[i])['ok']
  if t ~= 'string' and t ~= 'none' then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
  end
  local v = redis.call('GET', KEYS[i]) or ''
  sources[#sources + 1] = v
  width = math.max(width, #v)
end
if width == 0 then
  redis.call('DEL', KEYS[1])
  return 0
end

local band, bor, bnot = bit.band, bit.bor, bit.bnot
local function byte_at(s, i)
  return string.byte(s, i) or 0
end

local out = {}
for i = 1, width do
  local r
  if op == 'one' then
    local once, multi = 0, 0
    for _, s in ipairs(sources) do
      local v = byte_at(s, i)
      multi = bor(multi, band(once, v))
      once = band(bor(once, v), bnot(multi))
    end
    r = once
  else
    local x, ys = byte_at(sources[1], i), 0
    for j = 2, #sources do
      ys = bor(ys, byte_at(sources[j], i))
    end
    if op == 'diff' then
      r = band(x, bnot(ys))
    elseif op == 'diff1' then
      r = band(bnot(x), ys)
    else
      r = band(x, ys)
    end
  end
  out[i] = string.char(band(r, 255))
end
redis.call('SET', KEYS[1], table.concat(out))
return width
