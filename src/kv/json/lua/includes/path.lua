-- path: the JSONPath compiler and evaluator.
--
-- A path starting with `$` is JSONPath; anything else is a legacy path, rewritten as RedisJSON
-- does: `.` → `$`, `.a.b` → `$.a.b`, `a.b` → `$.a.b`, `[0]` → `$[0]`. Supported: `.name`,
-- `['name', "x"]`, `[1, -1]`, `[*]`, `.*`, `..` (recursive descent in Upstash's order: a
-- node's descendants' matches before its own, so `$..b` on {b:3, n:{b:null}} is [null,3] where
-- RedisJSON answers [3,null]), slices `[a:b:step]` and filters `[?(@.x > 1 && @.y == "s")]`
-- with == != < <= > >= && || ! and existence tests. A match is {n=node, p=parent,
-- k=key-or-1-based-index}; root has no parent.
-- Filters are in filter.lua, included at the end: it defines parse_filter and eval_filter,
-- declared here, with the helpers above.
--@include codec
local function path_err(s, i)
  jerr('Error occurred on position ' .. (i - 1) .. ", invalid JSONPath '" .. s .. "'")
end

local function to_fixed(path)
  if path:sub(1, 1) == '$' then return path, false end
  if path == '.' then return '$', true end
  local c = path:sub(1, 1)
  if c == '.' or c == '[' then return '$' .. path, true end
  return '$.' .. path, true
end

local parse_filter

local function parse_bracket(s, i)
  i = skip_ws(s, i)
  local c = s:sub(i, i)
  if c == '*' then
    local j = skip_ws(s, i + 1)
    if s:sub(j, j) ~= ']' then path_err(s, j) end
    return {k = 'wild'}, j + 1
  end
  if c == '?' then
    local expr, j = parse_filter(s, i + 1)
    j = skip_ws(s, j)
    if s:sub(j, j) ~= ']' then path_err(s, j) end
    return {k = 'filter', e = expr}, j + 1
  end
  if c == "'" or c == '"' then
    local names = {}
    while true do
      local q = s:sub(i, i)
      if q ~= "'" and q ~= '"' then path_err(s, i) end
      local j = s:find(q, i + 1, true)
      if not j then path_err(s, i) end
      names[#names + 1] = s:sub(i + 1, j - 1)
      i = skip_ws(s, j + 1)
      local d = s:sub(i, i)
      if d == ']' then
        if #names == 1 then return {k = 'name', name = names[1]}, i + 1 end
        return {k = 'names', l = names}, i + 1
      end
      if d ~= ',' then path_err(s, i) end
      i = skip_ws(s, i + 1)
    end
  end
  local a, e = s:match('^(-?%d*)()', i)
  i = skip_ws(s, e)
  if s:sub(i, i) == ':' then
    local b, e2 = s:match('^%s*(-?%d*)()', i + 1)
    local st, e3 = '', e2
    if s:sub(e2, e2) == ':' then st, e3 = s:match('^%s*(-?%d*)()', e2 + 1) end
    i = skip_ws(s, e3)
    if s:sub(i, i) ~= ']' then path_err(s, i) end
    return {k = 'slice', a = tonumber(a), b = tonumber(b), st = tonumber(st) or 1}, i + 1
  end
  local list = {}
  while true do
    if a == '' or a == '-' then path_err(s, i) end
    list[#list + 1] = tonumber(a)
    local d = s:sub(i, i)
    if d == ']' then return {k = 'idx', l = list}, i + 1 end
    if d ~= ',' then path_err(s, i) end
    a, e = s:match('^%s*(-?%d*)()', i + 1)
    i = skip_ws(s, e)
  end
end

-- Parses segments from s at i while they continue; namepat says what a dotted name may hold.
local function parse_segments(s, i, namepat)
  local segs = {}
  while i <= #s do
    local c = s:sub(i, i)
    local rec = false
    if c == '.' and s:sub(i + 1, i + 1) == '.' then rec = true; i = i + 2
    elseif c == '.' then i = i + 1
    elseif c ~= '[' then break end
    local sel
    c = s:sub(i, i)
    if c == '[' then sel, i = parse_bracket(s, i + 1)
    elseif c == '*' then sel = {k = 'wild'}; i = i + 1
    else
      local name = s:match(namepat, i)
      if not name then path_err(s, i) end
      sel = {k = 'name', name = name}; i = i + #name
    end
    segs[#segs + 1] = {rec = rec, sel = sel}
  end
  return segs, i
end

local function compile(path)
  local fixed, legacy = to_fixed(path)
  local segs, i = parse_segments(fixed, 2, '^[^%.%[]+')
  if i <= #fixed then path_err(fixed, i) end
  return {segs = segs, legacy = legacy, fixed = fixed, original = path}
end

local function children(node, out)
  if node.t == 'o' then
    spend(#node.k)
    for _, key in ipairs(node.k) do out[#out + 1] = {n = node.v[key], p = node, k = key} end
  elseif node.t == 'a' then
    spend(#node.v)
    for idx, v in ipairs(node.v) do out[#out + 1] = {n = v, p = node, k = idx} end
  end
  return out
end

local eval_filter

local function select_one(m, sel, out)
  local node, k = m.n, sel.k
  if k == 'name' then
    if node.t == 'o' and node.v[sel.name] ~= nil then
      out[#out + 1] = {n = node.v[sel.name], p = node, k = sel.name}
    end
  elseif k == 'names' then
    spend(#sel.l)
    for _, name in ipairs(sel.l) do
      if node.t == 'o' and node.v[name] ~= nil then
        out[#out + 1] = {n = node.v[name], p = node, k = name}
      end
    end
  elseif k == 'wild' then children(node, out)
  elseif node.t ~= 'a' then return
  elseif k == 'idx' then
    local n = #node.v
    spend(#sel.l)
    for _, idx in ipairs(sel.l) do
      if idx < 0 then idx = idx + n end
      if idx >= 0 and idx < n then out[#out + 1] = {n = node.v[idx + 1], p = node, k = idx + 1} end
    end
  elseif k == 'slice' then
    local n, st = #node.v, sel.st
    if st <= 0 then return end
    local a, b = sel.a or 0, sel.b or n
    if a < 0 then a = math.max(a + n, 0) end
    if b < 0 then b = math.max(b + n, 0) end
    b = math.min(b, n)
    if b > a then spend(math.ceil((b - a) / st)) end
    for idx = a, b - 1, st do out[#out + 1] = {n = node.v[idx + 1], p = node, k = idx + 1} end
  elseif k == 'filter' then
    for _, c in ipairs(children(node, {})) do
      if eval_filter(sel.e, c.n) then out[#out + 1] = c end
    end
  end
end

local function descend(m, sel, out)
  for _, c in ipairs(children(m.n, {})) do descend(c, sel, out) end
  select_one(m, sel, out)
end

local function run_segments(segs, root, upto)
  local cur = {{n = root}}
  for si = 1, upto or #segs do
    local seg, nxt = segs[si], {}
    for _, m in ipairs(cur) do
      if seg.rec then descend(m, seg.sel, nxt) else select_one(m, seg.sel, nxt) end
    end
    cur = nxt
  end
  return cur
end

local function eval_path(cp, root)
  G.root = root
  return run_segments(cp.segs, root)
end

-- Where JSON.SET/MERGE may add a value when the path matches nothing (RedisJSON's
-- find_add_paths): the path must be static (names and single indices only); a last-step name
-- gives {p=parent, k=name} for each parent (only objects lacking the key take it); a last-step
-- index out of range is an error. The second result is how many nodes the path's parent matched.
local function add_targets(cp, root)
  local segs = cp.segs
  for _, seg in ipairs(segs) do
    local k = seg.sel.k
    if seg.rec or not (k == 'name' or (k == 'idx' and #seg.sel.l == 1)) then
      jerr('Err wrong static path')
    end
  end
  local last = segs[#segs]
  if last.sel.k == 'idx' then
    if not run_segments(segs, root)[1] then jerr('ERR array index out of range') end
    return {}, 1
  end
  local out = {}
  G.root = root
  local parents = run_segments(segs, root, #segs - 1)
  for _, pm in ipairs(parents) do
    if pm.n.t == 'o' and pm.n.v[last.sel.name] == nil then
      out[#out + 1] = {p = pm.n, k = last.sel.name}
    end
  end
  return out, #parents
end

--@include filter
