-- kv-edit: one edit of the web console's KV browser (docs/console.md, "Compare before save"):
-- writes only if a read of what the page showed still answers the same, in one script so
-- nothing can change in between. Every argument arrives as the hex of its bytes, so values that
-- are not UTF-8 survive the REST API's JSON (which carries text) byte for byte.
--
--@keys key
-- ARGV: a read command as a count and that many arguments (count 0: no read, always write),
--   then `expected`, then any number of write commands, each a count and its arguments. Every
--   argument and `expected` is lowercase hex; counts are decimal. Every command names the key
--   itself too (KEYS[1] routes the script).
-- Returns 1 when the writes ran, 0 when the read answered something else (nothing written).
-- The read's reply is compared as bytes: a number as its decimal text, nil as the empty string,
-- an array (XRANGE) as its strings flattened in order and joined by a NUL byte.

-- Pairs of lowercase hex digits to their byte, for gsub (a table is much faster than a function).
local BYTE = {}
for n = 0, 255 do BYTE[string.format('%02x', n)] = string.char(n) end
local function bytes(hex)
  return (hex:gsub('..', BYTE))
end

local at = 1
local function take()
  local n = tonumber(ARGV[at])
  local out = {}
  for j = 1, n do out[j] = bytes(ARGV[at + j]) end
  at = at + n + 1
  return out
end

local function flat(v, out)
  if type(v) == 'table' then
    for _, x in ipairs(v) do flat(x, out) end
  else
    out[#out + 1] = tostring(v)
  end
  return out
end

local read = take()
local expected = bytes(ARGV[at])
at = at + 1
if #read > 0 then
  local current = redis.call(unpack(read))
  if not current then current = '' end
  if type(current) == 'number' then current = tostring(current) end
  if type(current) == 'table' then current = table.concat(flat(current, {}), '\0') end
  if current ~= expected then return 0 end
end
while at <= #ARGV do redis.call(unpack(take())) end
return 1
