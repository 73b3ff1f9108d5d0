-- edit-commands: the write commands on strings, arrays and booleans: JSON.STRAPPEND, ARRAPPEND,
-- ARRINSERT, ARRPOP, ARRTRIM, CLEAR, TOGGLE.
--@include codec
--@include encode
--@include path
--@include read-commands
--@include write-commands
-- Runs a per-match edit on the document at keys[1] and saves it when anything changed.
local function edit(keys, cp, want, what, fn, shown)
  local doc = must_doc(keys[1])
  local res, any = each_match(cp, doc, want, fn, what, shown)
  if any then save(keys[1], doc) end
  return res
end

C['json.strappend'] = function(keys, a)
  if #a < 1 or #a > 2 then arity('json.strappend') end
  local cp, s = compile(#a == 2 and a[1] or '.'), decode(a[#a])
  if s.t ~= 's' then
    jerr('WRONGTYPE wrong type of path value - expected string but found ' .. a[#a])
  end
  return edit(keys, cp, is_t('s'), 'not a string', function(m)
    m.n.v = m.n.v .. s.v
    return #m.n.v
  end)
end

local function parse_all(a, from)
  local vals = {}
  for i = from, #a do vals[#vals + 1] = decode(a[i]) end
  return vals
end

C['json.arrappend'] = function(keys, a)
  if #a < 2 then arity('json.arrappend') end
  local cp, vals = compile(a[1]), parse_all(a, 2)
  return edit(keys, cp, is_t('a'), 'not an array', function(m)
    for _, v in ipairs(vals) do m.n.v[#m.n.v + 1] = deep_copy(v) end
    return #m.n.v
  end, cp.original)
end

C['json.arrinsert'] = function(keys, a)
  if #a < 3 then arity('json.arrinsert') end
  local cp, index, vals = compile(a[1]), int_arg(a[2]), parse_all(a, 3)
  return edit(keys, cp, is_t('a'), 'not an array', function(m)
    local n, at = #m.n.v, index
    if at < 0 then at = at + n end
    if at < 0 or at > n then jerr('ERR index out of bounds') end
    for i, v in ipairs(vals) do table.insert(m.n.v, at + i, deep_copy(v)) end
    return #m.n.v
  end)
end

C['json.arrpop'] = function(keys, a)
  if #a > 2 then arity('json.arrpop') end
  local cp, index = compile(a[1] or '.'), a[2] and int_arg(a[2]) or -1
  return edit(keys, cp, is_t('a'), 'not an array', function(m)
    local n = #m.n.v
    if n == 0 then return false end
    local at = index
    if at < 0 then at = math.max(at + n, 0) end
    at = math.min(at, n - 1)
    return encode(table.remove(m.n.v, at + 1))
  end)
end

C['json.arrtrim'] = function(keys, a)
  if #a ~= 3 then arity('json.arrtrim') end
  local cp, start, stop = compile(a[1]), int_arg(a[2]), int_arg(a[3])
  return edit(keys, cp, is_t('a'), 'not an array', function(m)
    local n = #m.n.v
    local s, e = start, stop
    if s < 0 then s = math.max(n + s, 0) end
    if e < 0 then e = math.max(n + e, 0) end
    e = math.min(e, n - 1)
    local kept = {}
    if s < n and s <= e then
      for i = s + 1, e + 1 do kept[#kept + 1] = m.n.v[i] end
    end
    m.n.v = kept
    return #kept
  end)
end

C['json.clear'] = function(keys, a)
  local cp, doc = compile(a[1] or '$'), must_doc(keys[1])
  local n = 0
  for _, m in ipairs(eval_path(cp, doc)) do
    local node = m.n
    if node.t == 'o' then
      if #node.k > 0 then node.k, node.v, n = {}, {}, n + 1 end
    elseif node.t == 'a' then
      if #node.v > 0 then node.v, n = {}, n + 1 end
    elseif node.t == 'n' then
      if tonumber(node.v) ~= 0 then n = n + 1 end
      node.v = '0'
    end
  end
  if n > 0 then save(keys[1], doc) end
  return n
end

C['json.toggle'] = function(keys, a)
  if #a ~= 1 then arity('json.toggle') end
  local cp = compile(a[1])
  local res = edit(keys, cp, is_t('b'), 'not a bool', function(m)
    m.n.v = not m.n.v
    if cp.legacy then return m.n.v and 'true' or 'false' end
    return m.n.v and 1 or 0
  end)
  return res
end
