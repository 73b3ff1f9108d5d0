-- read-commands: helpers shared by all commands, and the read commands (JSON.GET, MGET, TYPE,
-- STRLEN, ARRLEN, ARRINDEX, OBJKEYS, OBJLEN, RESP), registered in the command table C. Each
-- command is `function(keys, args)` returning a value Redis converts to a reply (false → nil).
-- Reply shapes and error texts follow RedisJSON 2.x: JSONPath → one entry per match (nil where
-- the type does not fit), legacy → the first match (reads) or the last one (writes), or an error
-- when nothing fits.
--@include codec
--@include encode
--@include path
local NO_KEY = "ERR could not perform this operation on a key that doesn't exist"
local C = {}

local function arity(name) jerr("ERR wrong number of arguments for '" .. name .. "' command") end

local function load_doc(key)
  local raw = redis.call('GET', key)
  if not raw then return nil end
  local ok, doc = pcall(decode, raw, true)
  if not ok then jerr('WRONGTYPE Operation against a key holding the wrong kind of value') end
  return doc
end

local function must_doc(key) return load_doc(key) or jerr(NO_KEY) end

local function int_arg(s)
  if not s or not s:match('^-?%d+$') then jerr("ERR Couldn't parse as integer") end
  return tonumber(s)
end

local function is_t(t) return function(n) return n.t == t end end

local function no_path(p, what)
  if what then jerr("ERR Path '" .. p .. "' does not exist or " .. what) end
  jerr("ERR Path '" .. p .. "' does not exist")
end

-- Applies fn to every match whose node passes want. JSONPath: {result or false per match};
-- legacy: the last result (false for nil), erroring when no match passes. Second value: any ran.
local function each_match(cp, doc, want, fn, what, shown)
  local ms, out, any, last = eval_path(cp, doc), {}, false, false
  for i, m in ipairs(ms) do
    if want(m.n) then
      any = true
      local r = fn(m)
      if r == nil then r = false end
      out[i], last = r, r
    else
      out[i] = false
    end
  end
  if not cp.legacy then return out, any end
  if not any then no_path(shown or cp.fixed, what) end
  return last, any
end

-- First match for a legacy read, or an error naming the path.
local function first(cp, doc)
  local m = eval_path(cp, doc)[1]
  if not m then no_path(cp.fixed) end
  return m.n
end

local function wrong_type(node, expected)
  jerr('WRONGTYPE wrong type of path value - expected ' .. expected .. ' but found '
    .. type_name(node))
end

-- Shallow check for the whole-document fast path of JSON.GET: stashd stores canonical text, so
-- a value written by JSON.* is returned as stored without parsing it (see docs/json.md).
local function looks_json(raw)
  local a, z = raw:byte(1), raw:byte(-1)
  if a == B_LBRACE then return z == B_RBRACE end
  if a == B_LBRACK then return z == B_RBRACK end
  if a == B_QUOTE then return #raw > 1 and z == B_QUOTE end
  if raw == 'true' or raw == 'false' or raw == 'null' then return true end
  return raw:find('^-?%d+%.?%d*[eE]?[-+]?%d*$') ~= nil
end

local FMT_OPTS = {INDENT = 'indent', NEWLINE = 'newline', SPACE = 'space'}

C['json.get'] = function(keys, a)
  local fmt, paths, i = nil, {}, 1
  while i <= #a do
    local up = #a[i] <= 8 and a[i]:upper() or ''
    if FMT_OPTS[up] then
      if i == #a then arity('json.get') end
      fmt = fmt or {}; fmt[FMT_OPTS[up]] = a[i + 1]; i = i + 2
    elseif up == 'NOESCAPE' then i = i + 1
    else paths[#paths + 1] = compile(a[i]); i = i + 1 end
  end
  if #paths == 0 then paths[1] = compile('.') end
  if not fmt and #paths == 1 and #paths[1].segs == 0 then
    local raw = redis.call('GET', keys[1])
    if not raw then return false end
    if looks_json(raw) then return paths[1].legacy and raw or '[' .. raw .. ']' end
  end
  local doc = load_doc(keys[1])
  if not doc then return false end
  local all_legacy = true
  for _, cp in ipairs(paths) do all_legacy = all_legacy and cp.legacy end
  local function value(cp)
    if all_legacy then
      local m = eval_path(cp, doc)[1]
      if not m then no_path(#paths == 1 and cp.fixed or cp.original) end
      return m.n
    end
    local arr = {t = 'a', v = {}}
    for _, m in ipairs(eval_path(cp, doc)) do arr.v[#arr.v + 1] = m.n end
    return arr
  end
  if #paths == 1 then return encode(value(paths[1]), fmt) end
  local obj = {t = 'o', k = {}, v = {}}
  for _, cp in ipairs(paths) do
    if obj.v[cp.original] == nil then obj.k[#obj.k + 1] = cp.original end
    obj.v[cp.original] = value(cp)
  end
  return encode(obj, fmt)
end

-- One MGET entry: nil for a missing key, another type or a non-JSON string, as RedisJSON.
local function mget_one(cp, key)
  local ok, raw = pcall(redis.call, 'GET', key)
  if not ok or not raw then return false end
  if #cp.segs == 0 and looks_json(raw) then return cp.legacy and raw or '[' .. raw .. ']' end
  local parsed, doc = pcall(decode, raw, true)
  if not parsed then return false end
  if cp.legacy then
    local m = eval_path(cp, doc)[1]
    return m and encode(m.n) or false
  end
  local arr = {t = 'a', v = {}}
  for _, m in ipairs(eval_path(cp, doc)) do arr.v[#arr.v + 1] = m.n end
  return encode(arr)
end

C['json.mget'] = function(keys, a)
  if #keys < 1 or #a ~= 1 then arity('json.mget') end
  local cp, out = compile(a[1]), {}
  for i, key in ipairs(keys) do out[i] = mget_one(cp, key) end
  return out
end

C['json.type'] = function(keys, a)
  local cp, doc = compile(a[1] or '.'), load_doc(keys[1])
  if not doc then return false end
  if cp.legacy then
    local m = eval_path(cp, doc)[1]
    return m and type_name(m.n) or false
  end
  local out = {}
  for i, m in ipairs(eval_path(cp, doc)) do out[i] = type_name(m.n) end
  return out
end

-- Shared shape of STRLEN, ARRLEN, OBJLEN, OBJKEYS. JSONPath: one entry per match (the key must
-- exist). Legacy: the first match; spec.missing / spec.wrong say what a missing path / a value
-- of another type gives ('nil', 'path' = "Path does not exist [or …]", 'type' = WRONGTYPE).
local function sized(keys, a, spec)
  local cp = compile(a[1] or '.')
  local shown = spec.original and cp.original or cp.fixed
  if not cp.legacy then
    local doc = load_doc(keys[1])
    if not doc then
      if spec.t == 'o' and spec.name == 'objlen' then no_path(cp.fixed, spec.what) end
      jerr(NO_KEY)
    end
    return (each_match(cp, doc, is_t(spec.t), function(m) return spec.size(m.n) end))
  end
  local doc = load_doc(keys[1])
  if not doc then return false end
  local m = eval_path(cp, doc)[1]
  if not m then
    if spec.missing == 'nil' then return false end
    no_path(shown)
  end
  if m.n.t ~= spec.t then
    if spec.wrong == 'type' then wrong_type(m.n, spec.expected) end
    no_path(shown, spec.what)
  end
  return spec.size(m.n)
end

local function len_v(n) return #n.v end
local function len_k(n) return #n.k end

C['json.strlen'] = function(keys, a)
  return sized(keys, a, {t = 's', size = len_v, wrong = 'type', expected = 'string'})
end
C['json.arrlen'] = function(keys, a)
  return sized(keys, a, {t = 'a', size = len_v, what = 'not an array', original = true})
end
C['json.objlen'] = function(keys, a)
  return sized(keys, a, {t = 'o', name = 'objlen', size = len_k, missing = 'nil', wrong = 'type',
    expected = 'object', what = 'not an object'})
end
C['json.objkeys'] = function(keys, a)
  return sized(keys, a, {t = 'o', missing = 'nil', what = 'not an object', size = function(n)
    local out = {}
    for i, key in ipairs(n.k) do out[i] = key end
    return out
  end})
end

local function index_in(arr, val, start, stop)
  local n = #arr.v
  if n == 0 then return -1 end
  if start < 0 then start = math.max(n + start, 0) else start = math.min(start, n - 1) end
  if stop == 0 then stop = n elseif stop < 0 then stop = math.max(n + stop, 0) end
  stop = math.min(stop, n)
  for i = start + 1, stop do if json_equal(arr.v[i], val) then return i - 1 end end
  return -1
end

C['json.arrindex'] = function(keys, a)
  if #a < 2 or #a > 4 then arity('json.arrindex') end
  local cp = compile(a[1])
  local val = decode(a[2])
  local start, stop = a[3] and int_arg(a[3]) or 0, a[4] and int_arg(a[4]) or 0
  local doc = load_doc(keys[1])
  if not doc then no_path(cp.original) end
  if cp.legacy then
    local n = first(cp, doc)
    if n.t ~= 'a' then wrong_type(n, 'array') end
    return index_in(n, val, start, stop)
  end
  return (each_match(cp, doc, is_t('a'), function(m) return index_in(m.n, val, start, stop) end))
end

local function resp(n)
  local t = n.t
  if t == 's' then return n.v end
  if t == 'z' then return false end
  if t == 'b' then return {ok = n.v and 'true' or 'false'} end
  if t == 'n' then
    if is_int_lex(n.v) then return tonumber(n.v) end
    return (n.v:gsub('%.0$', ''))
  end
  local out = {t == 'o' and '{' or '['}
  if t == 'a' then
    for _, v in ipairs(n.v) do out[#out + 1] = resp(v) end
  else
    for _, key in ipairs(n.k) do out[#out + 1] = key; out[#out + 1] = resp(n.v[key]) end
  end
  return out
end

C['json.resp'] = function(keys, a)
  local cp, doc = compile(a[1] or '.'), load_doc(keys[1])
  if not doc then return false end
  if cp.legacy then return resp(first(cp, doc)) end
  local out = {}
  for i, m in ipairs(eval_path(cp, doc)) do out[i] = resp(m.n) end
  return out
end
