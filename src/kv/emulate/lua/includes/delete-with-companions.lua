-- delete-with-companions: DEL or UNLINK of keys that may have a field-TTL companion, shared by
-- hash.lua and hash-delete.lua.
--
-- KEYS     every key named, each followed by its companion
-- command  'del' or 'unlink'
-- Returns  the number of keys deleted, companions not counted; Redis's error as is.
local function delete_with_companions(command)
  local names, companions = {}, {}
  for i = 1, #KEYS, 2 do
    names[#names + 1] = KEYS[i]
    companions[#companions + 1] = KEYS[i + 1]
  end
  -- In slices: unpack() fails beyond a few thousand values.
  local total = 0
  for from = 1, #names, 1000 do
    local upto = math.min(from + 999, #names)
    local r = redis.pcall(command, unpack(names, from, upto))
    if type(r) == 'table' and r.err then
      return r
    end
    total = total + r
    redis.call('UNLINK', unpack(companions, from, upto))
  end
  return total
end
