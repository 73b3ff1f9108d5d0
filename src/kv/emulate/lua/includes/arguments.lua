-- arguments: argument checks shared by the emulation scripts, with Redis's rules and texts.

local function fail(text)
  return redis.error_reply(text)
end

-- A Redis integer argument (string2ll rules: optional '-', digits, no '+' or spaces), or nil.
local function int(s)
  if s == nil or not string.match(s, '^%-?%d+$') or #s > 20 then
    return nil
  end
  if #s > 1 and string.sub(s, 1, 1) == '0' then
    return nil
  end
  if string.sub(s, 1, 2) == '-0' then
    return nil
  end
  local n = tonumber(s)
  if n > 9223372036854775807 or n < -9223372036854775808 then
    return nil
  end
  return n
end

-- true when `key` holds a value of type `kind`, false when it does not exist, else the
-- WRONGTYPE error reply.
local function key_of_type(key_name, kind)
  local t = redis.call('TYPE', key_name)['ok']
  if t ~= kind and t ~= 'none' then
    return fail('WRONGTYPE Operation against a key holding the wrong kind of value')
  end
  return t == kind
end

-- `WORD count item…` at list[at], running to the end of the list: the items, or nil and the
-- error reply. `texts` holds the errors for a missing WORD (`missing`), a count that is not a
-- positive integer (`count`) and a count that does not match the items left (`mismatch`).
local function counted_items(list, at, word, texts)
  if list[at] == nil or string.upper(list[at]) ~= word then
    return nil, fail(texts.missing)
  end
  local n = int(list[at + 1])
  if n == nil or n < 1 then
    return nil, fail(texts.count)
  end
  if n ~= #list - at - 1 then
    return nil, fail(texts.mismatch)
  end
  local out = {}
  for i = at + 2, #list do
    out[#out + 1] = list[i]
  end
  return out
end
