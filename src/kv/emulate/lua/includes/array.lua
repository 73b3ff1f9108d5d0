-- array: Redis 8.8's array type (ARSET … ARINFO) on a Redis without it, the body of
-- array-write.lua and array-read.lua (see docs/compatibility.md, "Arrays").
--
-- KEYS[1]  the array
-- ARGV[1]  the lower-case command name (arset, arget, …)
-- ARGV[2..] the command's arguments after its key
-- Returns  what Redis 8.8 returns for that command, errors included (the limits below aside).
--
-- Layout: the array is a sorted set. Member `~a` (score -1) marks it as an array (a sorted set
-- without it is another type: WRONGTYPE); member `~c` (score -(cursor + 2)), present only once
-- an append placed it, holds the append cursor (the index the last ARINSERT / ARRING wrote);
-- every value is a member `<index>:<value>` with score <index>. An array whose last value is
-- deleted is deleted, cursor included, as in Redis.
--
-- Limits: indexes are exact up to 2^53 - 1 (Lua numbers are doubles); a larger valid index
-- (up to 2^64 - 2) is refused with its own error. ARGREP's RE predicates are refused (Lua has no
-- POSIX regular expressions). AROP sums in doubles (Redis: long double), and bitwise results
-- beyond 2^53 lose precision in the integer reply.
--
-- The gateway has checked each command's arity (array-route.ts). Argument errors are raised as
-- error replies and caught at the end, where they become the script's reply.
--
-- READ_ONLY (set by the including script) is true in the `no-writes` variant, which the gateway
-- uses for the read commands only.
-- luacheck: push ignore 211/counted_items (an argument helper the array commands do not need)
--@include arguments
-- luacheck: pop
local key = KEYS[1]
local cmd = ARGV[1]
local args = {}
for i = 2, #ARGV do
  args[#args + 1] = ARGV[i]
end

local MAX_INDEX = 9007199254740991 -- 2^53 - 1
local UINT64_MAX = '18446744073709551615'
local MAX_RANGE = 1000000
local MARK, CURSOR = '~a', '~c'
local UNSUPPORTED = 'ERR array index beyond 9007199254740991 is not supported by stashd'
  .. "'s array emulation"
local SYNTAX = 'ERR syntax error'

-- Ends the command with an error reply (the text kept here: Redis turns a raised error into a
-- string with its own prefix, so the catch at the end answers with this text instead).
local raised
local function raise(text)
  raised = text
  error(text)
end

local function arity()
  raise("ERR wrong number of arguments for '" .. cmd .. "' command")
end

local function str(n)
  return string.format('%.0f', n)
end

-- An index argument (string2ull: optional '+', digits); `allow_max` also takes 2^64 - 1
-- (ARSEEK's terminal cursor). Raises "invalid array index", or stashd's own error past 2^53 - 1.
local function index_of(s, allow_max)
  local digits = s and string.match(s, '^%+?0*(%d-)$')
  if digits == nil or (digits == '' and not string.match(s, '0$')) then
    raise('ERR invalid array index')
  end
  if digits == '' then
    return 0
  end
  if #digits > 20 or (#digits == 20 and (digits > UINT64_MAX or
      (digits == UINT64_MAX and not allow_max))) then
    raise('ERR invalid array index')
  end
  local n = tonumber(digits)
  if n > MAX_INDEX then
    raise(UNSUPPORTED)
  end
  return n
end

-- Every index in list[from], list[from + step], ….
local function indexes_at(list, from, step)
  local out = {}
  for i = from, #list, step do
    out[#out + 1] = index_of(list[i])
  end
  return out
end

-- A positive LIMIT count.
local function limit_of(s)
  local n = int(s)
  if n == nil then
    raise('ERR value is not an integer or out of range')
  end
  if n <= 0 then
    raise('ERR LIMIT must be positive')
  end
  return n
end

-- true when the key is an array, false when it does not exist; raises WRONGTYPE otherwise.
local function is_array()
  local zset = key_of_type(key, 'zset')
  if type(zset) == 'table' or (zset and tonumber(redis.call('ZSCORE', key, MARK)) ~= -1) then
    raise('WRONGTYPE Operation against a key holding the wrong kind of value')
  end
  return zset
end

-- The append cursor, or nil when none was placed (the next append writes index 0).
local function cursor()
  local s = redis.call('ZSCORE', key, CURSOR)
  return s and -tonumber(s) - 2 or nil
end

local function set_cursor(at)
  if at == nil then
    redis.call('ZREM', key, CURSOR)
  else
    redis.call('ZADD', key, str(-at - 2), CURSOR)
  end
end

-- Index and value of a value member.
local function split(member)
  local colon = string.find(member, ':', 1, true)
  return tonumber(string.sub(member, 1, colon - 1)), string.sub(member, colon + 1)
end

local function get(i)
  local m = redis.call('ZRANGEBYSCORE', key, str(i), str(i))[1]
  if m == nil then
    return false
  end
  local _, v = split(m)
  return v
end

-- Writes value v at index i; 1 when the slot was empty.
local function put(i, v)
  local s = str(i)
  local old = redis.call('ZRANGEBYSCORE', key, s, s)[1]
  if old then
    redis.call('ZREM', key, old)
  end
  redis.call('ZADD', key, s, s .. ':' .. v)
  return old and 0 or 1
end

local function count()
  return redis.call('ZCOUNT', key, '0', '+inf')
end

-- Highest occupied index plus one.
local function len()
  local top = redis.call('ZREVRANGEBYSCORE', key, '+inf', '0', 'LIMIT', '0', '1')[1]
  return top and split(top) + 1 or 0
end

-- Deletes the key when its last value went, as Redis does.
local function drop_if_empty()
  if count() == 0 then
    redis.call('DEL', key)
  end
end

-- The array for writing, created when missing.
local function writable()
  if not is_array() then
    redis.call('ZADD', key, '-1', MARK)
  end
end

-- The value members in [lo, hi] (either order: descending when lo > hi), at most `limit`.
local function members(lo, hi, limit)
  local lim = limit and { 'LIMIT', '0', str(limit) } or {}
  if lo <= hi then
    return redis.call('ZRANGEBYSCORE', key, str(lo), str(hi), unpack(lim))
  end
  return redis.call('ZREVRANGEBYSCORE', key, str(lo), str(hi), unpack(lim))
end

---------------------------------------------------------------------------------------------
-- Reads

local function arget()
  local exists = is_array()
  local i = index_of(args[1])
  return exists and get(i)
end

local function armget()
  local exists = is_array()
  local out = {}
  for n, i in ipairs(indexes_at(args, 1, 1)) do
    out[n] = exists and get(i)
  end
  return out
end

local function argetrange()
  local lo, hi = index_of(args[1]), index_of(args[2])
  local exists = is_array()
  local first, last = math.min(lo, hi), math.max(lo, hi)
  if last - first + 1 > MAX_RANGE then
    raise('ERR range exceeds maximum of ' .. MAX_RANGE .. ' items')
  end
  local out = {}
  for n = 1, last - first + 1 do
    out[n] = false
  end
  for _, m in ipairs(exists and members(first, last) or {}) do
    local i, v = split(m)
    out[(lo <= hi) and (i - first + 1) or (last - i + 1)] = v
  end
  return out
end

local function arscan()
  local lo, hi = index_of(args[1]), index_of(args[2])
  local limit
  if #args == 4 then
    if string.upper(args[3]) ~= 'LIMIT' then
      raise(SYNTAX)
    end
    limit = limit_of(args[4])
  elseif #args ~= 2 then
    arity()
  end
  local out = {}
  for _, m in ipairs(is_array() and members(lo, hi, limit) or {}) do
    local i, v = split(m)
    out[#out + 1] = { i, v }
  end
  return out
end

-- Redis's glob (stringmatchlen): *, ?, [set] with ^ and ranges, \ escapes.
local function glob(p, s, pi, si)
  while pi <= #p do
    local c = string.sub(p, pi, pi)
    if c == '*' then
      while string.sub(p, pi + 1, pi + 1) == '*' do
        pi = pi + 1
      end
      if pi == #p then
        return true
      end
      for k = si, #s + 1 do
        if glob(p, s, pi + 1, k) then
          return true
        end
      end
      return false
    end
    if si > #s then
      return false
    end
    local ch = string.sub(s, si, si)
    if c == '?' then
      pi = pi + 1
    elseif c == '[' then
      local j, negate, hit = pi + 1, false, false
      if string.sub(p, j, j) == '^' then
        negate, j = true, j + 1
      end
      while j <= #p and string.sub(p, j, j) ~= ']' do
        local a = string.sub(p, j, j)
        if a == '\\' and j < #p then
          j = j + 1
          hit = hit or string.sub(p, j, j) == ch
        elseif string.sub(p, j + 1, j + 1) == '-' and j + 2 <= #p and
            string.sub(p, j + 2, j + 2) ~= ']' then
          local b = string.sub(p, j + 2, j + 2)
          local from, to = math.min(a:byte(), b:byte()), math.max(a:byte(), b:byte())
          hit = hit or (ch:byte() >= from and ch:byte() <= to)
          j = j + 2
        else
          hit = hit or a == ch
        end
        j = j + 1
      end
      if hit == negate then
        return false
      end
      pi = j + 1
    else
      if c == '\\' and pi < #p then
        pi = pi + 1
        c = string.sub(p, pi, pi)
      end
      if c ~= ch then
        return false
      end
      pi = pi + 1
    end
    si = si + 1
  end
  return si > #s
end

local PREDICATES = { EXACT = true, MATCH = true, GLOB = true, RE = true }

-- ARGREP's predicates and options, taken in any order as Redis does.
local function grep_plan()
  local plan = { preds = {}, any = true, limit = nil, values = false, nocase = false }
  local at = 3
  while at <= #args do
    local word = string.upper(args[at])
    local takes_value = PREDICATES[word] or word == 'LIMIT'
    if takes_value and at + 1 > #args then
      raise(SYNTAX)
    end
    if PREDICATES[word] then
      if #plan.preds >= 250 then
        raise('ERR too many predicates, maximum is 250')
      elseif word == 'RE' then
        raise("ERR RE predicates are not supported by stashd's array emulation")
      end
      plan.preds[#plan.preds + 1] = { word, args[at + 1] }
    elseif word == 'LIMIT' then
      plan.limit = limit_of(args[at + 1])
    elseif word == 'WITHVALUES' or word == 'NOCASE' then
      plan[word == 'WITHVALUES' and 'values' or 'nocase'] = true
    elseif word == 'AND' or word == 'OR' then
      plan.any = word == 'OR'
    else
      raise(SYNTAX)
    end
    at = at + (takes_value and 2 or 1)
  end
  if #plan.preds == 0 then
    raise(SYNTAX)
  end
  return plan
end

-- ASCII-only lower case, as Redis compares with NOCASE.
local function lower(s)
  return (string.gsub(s, '%u', string.lower))
end

local function predicate_holds(pred, v, nocase)
  local kind, pattern = pred[1], pred[2]
  if nocase then
    v, pattern = lower(v), lower(pattern)
  end
  if kind == 'EXACT' then
    return v == pattern
  elseif kind == 'MATCH' then
    return string.find(v, pattern, 1, true) ~= nil
  end
  return glob(pattern, v, 1, 1)
end

local function grep_matches(plan, v)
  for _, pred in ipairs(plan.preds) do
    local holds = predicate_holds(pred, v, plan.nocase)
    if holds == plan.any then
      return holds
    end
  end
  return not plan.any
end

-- ARGREP's bounds: an index, '-' (0) or '+' (the last index, resolved once the array is known).
local function bound_of(s)
  if s == '-' or s == '+' then
    return s
  end
  return index_of(s)
end

local function argrep()
  local from, to = bound_of(args[1]), bound_of(args[2])
  local plan = grep_plan()
  local out = {}
  local last = is_array() and len() - 1 or -1
  if last < 0 then
    return out
  end
  local ends = { ['-'] = 0, ['+'] = last }
  for _, m in ipairs(members(ends[from] or from, ends[to] or to)) do
    local i, v = split(m)
    if grep_matches(plan, v) then
      out[#out + 1] = plan.values and { i, v } or i
      if plan.limit and #out >= plan.limit then
        break
      end
    end
  end
  return out
end

-- Exact signed 64-bit integer of a decimal string as two 32-bit words (two's complement).
local TWO32 = 4294967296
local function words_of(digits, negative)
  local hi, lo = 0, 0
  for d in string.gmatch(digits, '%d') do
    lo = lo * 10 + tonumber(d)
    local carry = math.floor(lo / TWO32)
    lo = lo % TWO32
    hi = (hi * 10 + carry) % TWO32
  end
  if negative then
    hi, lo = (TWO32 - 1 - hi), (TWO32 - 1 - lo) + 1
    if lo == TWO32 then
      hi, lo = (hi + 1) % TWO32, 0
    end
  end
  return hi, lo
end

local INT64_MAX, INT64_MIN = '9223372036854775807', '9223372036854775808'

-- A value as Redis's AROP reads it: an integer (string2ll) with its words, a float
-- (string2ld), or nil when it is neither.
local function numeric(v)
  local sign, digits = string.match(v, '^(%-?)(%d+)$')
  if digits and (digits == '0' or not string.match(digits, '^0')) then
    local limit = sign == '-' and INT64_MIN or INT64_MAX
    if #digits < 19 or (#digits == 19 and digits <= limit) then
      local hi, lo = words_of(digits, sign == '-')
      return tonumber(v), hi, lo
    end
  end
  if string.match(v, '^[%+%-]?%d*%.?%d*[eE]?[%+%-]?%d*$') and string.match(v, '%d') then
    local n = tonumber(v)
    if n and n == n then
      return n
    end
  end
  return nil
end

local function bitwise(op, a, b)
  local r = op == 'AND' and bit.band(a, b) or op == 'OR' and bit.bor(a, b) or bit.bxor(a, b)
  return r % TWO32
end

local function number_text(n)
  if n == math.floor(n) and math.abs(n) < 2 ^ 53 then
    return str(n)
  end
  local s = string.format('%.17g', n)
  if string.find(s, '.', 1, true) and not string.find(s, 'e', 1, true) then
    s = string.gsub(string.gsub(s, '0+$', ''), '%.$', '')
  end
  return s
end

local OPS = { SUM = 1, MIN = 1, MAX = 1, AND = 2, OR = 2, XOR = 2, USED = 3, MATCH = 3 }

-- AROP's fold of the numeric operations (SUM, MIN, MAX) over one value.
local function fold_number(op, acc, v)
  local n = numeric(v)
  if n == nil or acc == nil then
    return n or acc
  elseif op == 'SUM' then
    return acc + n
  end
  return (op == 'MIN') and math.min(acc, n) or math.max(acc, n)
end

-- AROP's 64-bit words of one value for AND, OR, XOR: integers as they are, floats truncated
-- toward zero; nil for a value that is neither or out of the int64 range.
local function words(v)
  local n, h, l = numeric(v)
  if n and not h and math.abs(n) < 2 ^ 63 then
    local t = n < 0 and math.ceil(n) or math.floor(n)
    h, l = words_of(str(math.abs(t)), t < 0)
  end
  return h, l
end

local function arop()
  local lo, hi = index_of(args[1]), index_of(args[2])
  local op = string.upper(args[3])
  if not OPS[op] then
    raise('ERR unknown operation')
  elseif op == 'MATCH' and #args ~= 4 then
    raise('ERR MATCH requires a value argument')
  elseif op ~= 'MATCH' and #args ~= 3 then
    arity()
  end
  if not is_array() then
    return OPS[op] == 3 and 0 or false
  end
  local acc, hits, whi, wlo = nil, 0, nil, nil
  for _, m in ipairs(members(lo, hi)) do
    local _, v = split(m)
    if op == 'USED' or (op == 'MATCH' and v == args[4]) then
      hits = hits + 1
    elseif OPS[op] == 1 then
      acc = fold_number(op, acc, v)
    elseif OPS[op] == 2 then
      local h, l = words(v)
      if h and whi == nil then
        whi, wlo = h, l
      elseif h then
        whi, wlo = bitwise(op, whi, h), bitwise(op, wlo, l)
      end
    end
  end
  if OPS[op] == 3 then
    return hits
  elseif OPS[op] == 2 then
    return whi ~= nil and (whi >= 2 ^ 31 and whi - TWO32 or whi) * TWO32 + wlo
  end
  return acc ~= nil and number_text(acc)
end

local function arnext()
  local at = is_array() and cursor() or nil
  return at == nil and 0 or at + 1
end

local function arlastitems()
  local n = int(args[1])
  if n == nil then
    raise('ERR invalid COUNT')
  end
  local rev = #args == 2
  if rev and string.upper(args[2]) ~= 'REV' then
    raise(SYNTAX)
  elseif #args > 2 then
    arity()
  end
  if n <= 0 or not is_array() then
    return {}
  end
  local size = len()
  local at = cursor() or size - 1
  local newest_first = {}
  for step = 1, math.min(n, count()) do
    newest_first[step] = get(at)
    at = at == 0 and size - 1 or at - 1
  end
  if rev then
    return newest_first
  end
  local out = {}
  for step = #newest_first, 1, -1 do
    out[#out + 1] = newest_first[step]
  end
  return out
end

local function arinfo()
  local full = #args == 1 and string.upper(args[1]) == 'FULL'
  if #args > 0 and not full then
    raise(SYNTAX)
  end
  if not is_array() then
    raise('ERR no such key')
  end
  local at = cursor()
  -- The slice fields describe Redis's memory layout, which an emulated array does not have.
  local out = { 'count', count(), 'len', len(), 'next-insert-index', at and at + 1 or 0,
    'slices', 0, 'directory-size', 0, 'super-dir-entries', 0, 'slice-size', 0 }
  if full then
    for _, name in ipairs({ 'dense-slices', 'sparse-slices' }) do
      out[#out + 1], out[#out + 2] = name, 0
    end
    for _, name in ipairs({ 'avg-dense-size', 'avg-dense-fill', 'avg-sparse-size' }) do
      out[#out + 1], out[#out + 2] = name, '0'
    end
  end
  return out
end

---------------------------------------------------------------------------------------------
-- Writes

local function arset()
  local start = index_of(args[1])
  if start + #args - 2 > MAX_INDEX then
    raise(UNSUPPORTED)
  end
  writable()
  local added = 0
  for n = 2, #args do
    added = added + put(start + n - 2, args[n])
  end
  return added
end

local function armset()
  if #args % 2 ~= 0 then
    arity()
  end
  local list = indexes_at(args, 1, 2)
  writable()
  local added = 0
  for n, i in ipairs(list) do
    added = added + put(i, args[2 * n])
  end
  return added
end

-- ARDEL (each index a range of one) and ARDELRANGE: the values removed.
local function delete_ranges(list, step)
  if not is_array() then
    return 0
  end
  local deleted = 0
  for n = 1, #list, step do
    local a, b = list[n], list[n + step - 1]
    deleted = deleted + redis.call('ZREMRANGEBYSCORE', key, str(math.min(a, b)),
      str(math.max(a, b)))
  end
  drop_if_empty()
  return deleted
end

local function ardel()
  return delete_ranges(indexes_at(args, 1, 1), 1)
end

local function ardelrange()
  if #args % 2 ~= 0 then
    arity()
  end
  return delete_ranges(indexes_at(args, 1, 1), 2)
end

local function arinsert()
  writable()
  local at = cursor()
  local start = at == nil and 0 or at + 1
  local last = start + #args - 1
  if last > MAX_INDEX then
    drop_if_empty()
    raise(UNSUPPORTED)
  end
  for n, v in ipairs(args) do
    put(start + n - 1, v)
  end
  set_cursor(last)
  return last
end

-- ARRING's reshape (Redis's arRingRework): keep the newest contiguous values, at most `keep`,
-- walking back from the cursor, and store them again from index 0, oldest first.
local function reshape(span, keep)
  local at = cursor()
  local src = at == nil and span - 1 or math.fmod(at, span)
  local kept = {}
  while #kept < keep do
    local v = get(src)
    if v == false then
      break
    end
    table.insert(kept, 1, v)
    src = src == 0 and span - 1 or src - 1
  end
  redis.call('DEL', key)
  writable()
  for n, v in ipairs(kept) do
    put(n - 1, v)
  end
  set_cursor(#kept > 0 and #kept - 1 or nil)
end

local function arring()
  local size = int(args[1])
  if size == nil then
    raise('ERR invalid size')
  elseif size <= 0 then
    raise('ERR size must be positive')
  end
  writable()
  local span, at = len(), cursor()
  if span > 0 and size < span then
    reshape(span, size)
  elseif span > 0 and size > span and at ~= nil and at + 1 < span then
    reshape(span, span)
  end
  local written = 0
  for n = 2, #args do
    at = cursor()
    written = math.fmod(at == nil and 0 or at + 1, size)
    put(written, args[n])
    set_cursor(written)
  end
  return written
end

local function arseek()
  local i = index_of(args[1], true)
  if not is_array() then
    return 0
  end
  set_cursor(i > 0 and i - 1 or nil)
  return 1
end

local READS = {
  arget = arget,
  armget = armget,
  arlen = function()
    return is_array() and len() or 0
  end,
  arcount = function()
    return is_array() and count() or 0
  end,
  argetrange = argetrange,
  arscan = arscan,
  argrep = argrep,
  arop = arop,
  arnext = arnext,
  arlastitems = arlastitems,
  arinfo = arinfo,
}
local WRITES = {
  arset = arset,
  armset = armset,
  ardel = ardel,
  ardelrange = ardelrange,
  arinsert = arinsert,
  arring = arring,
  arseek = arseek,
}

local run = READS[cmd] or (not READ_ONLY and WRITES[cmd])
if not run then
  return fail("ERR unknown command '" .. cmd .. "'")
end
-- A raised error reply is returned as the reply: raised past the script, Redis would append the
-- script's line to its text. Other errors (a bug, a failed redis.call) go on as they are.
local ok, reply = pcall(run)
if ok then
  return reply
elseif raised then
  return fail(raised)
end
error(reply, 0)
