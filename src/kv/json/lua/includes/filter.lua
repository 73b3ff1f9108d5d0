-- filter: JSONPath filter expressions (`[?(...)]`), part of the path compiler (path.lua includes
-- this at its end). Operands: `@…` (first match below the candidate), `$…` (first match from the
-- document root), numbers, 'strings', "strings", true, false, null. Comparing different types is
-- false; `=~` is not supported.
--@include codec
--@include path
local function parse_operand(s, i)
  i = skip_ws(s, i)
  local c = s:sub(i, i)
  if c == '@' or c == '$' then
    local segs, j = parse_segments(s, i + 1, '^[%w_]+')
    return {k = 'path', rel = c == '@', segs = segs}, j
  end
  if c == "'" or c == '"' then
    local j = s:find(c, i + 1, true)
    if not j then path_err(s, i) end
    return {k = 'lit', v = {t = 's', v = s:sub(i + 1, j - 1)}}, j + 1
  end
  local num = s:match('^-?%d+%.?%d*[eE]?[-+]?%d*', i)
  if num and num ~= '' and num ~= '-' then
    return {k = 'lit', v = {t = 'n', v = norm_num(num)}}, i + #num
  end
  for word, v in pairs({['true'] = {t = 'b', v = true}, ['false'] = {t = 'b', v = false},
      null = {t = 'z'}}) do
    if s:sub(i, i + #word - 1) == word then return {k = 'lit', v = v}, i + #word end
  end
  path_err(s, i)
end

local OPS = {'==', '!=', '<=', '>=', '<', '>'}
local parse_or

local function parse_unary(s, i)
  i = skip_ws(s, i)
  local c = s:sub(i, i)
  if c == '!' and s:sub(i + 1, i + 1) ~= '=' then
    local e, j = parse_unary(s, i + 1)
    return {k = 'not', e = e}, j
  end
  if c == '(' then
    local e, j = parse_or(s, i + 1)
    j = skip_ws(s, j)
    if s:sub(j, j) ~= ')' then path_err(s, j) end
    return e, j + 1
  end
  local left, j = parse_operand(s, i)
  j = skip_ws(s, j)
  for _, op in ipairs(OPS) do
    if s:sub(j, j + #op - 1) == op then
      local right, e = parse_operand(s, j + #op)
      return {k = 'cmp', op = op, l = left, r = right}, e
    end
  end
  return {k = 'exists', o = left}, j
end

local function parse_chain(s, i, sub, op, kind)
  local e, j = sub(s, i)
  while true do
    j = skip_ws(s, j)
    if s:sub(j, j + 1) ~= op then return e, j end
    local r; r, j = sub(s, j + 2)
    e = {k = kind, l = e, r = r}
  end
end

local function parse_and(s, i) return parse_chain(s, i, parse_unary, '&&', 'and') end
parse_or = function(s, i) return parse_chain(s, i, parse_and, '||', 'or') end

parse_filter = function(s, i) return parse_or(s, i) end

local function operand_value(o, node)
  if o.k == 'lit' then return o.v end
  spend(1)
  local found = run_segments(o.segs, o.rel and node or G.root)
  return found[1] and found[1].n
end

local function json_equal(a, b)
  if a.t ~= b.t then return false end
  if a.t == 'n' then return tonumber(a.v) == tonumber(b.v) end
  if a.t == 's' or a.t == 'b' then return a.v == b.v end
  if a.t == 'z' then return true end
  if a.t == 'a' then
    if #a.v ~= #b.v then return false end
    spend(#a.v)
    for i = 1, #a.v do if not json_equal(a.v[i], b.v[i]) then return false end end
    return true
  end
  if #a.k ~= #b.k then return false end
  spend(#a.k)
  for _, key in ipairs(a.k) do
    if b.v[key] == nil or not json_equal(a.v[key], b.v[key]) then return false end
  end
  return true
end

local function compare(op, a, b)
  if a == nil or b == nil then return op == '!=' and a ~= b end
  if op == '==' then return json_equal(a, b) end
  if op == '!=' then return not json_equal(a, b) end
  if a.t ~= b.t or (a.t ~= 'n' and a.t ~= 's') then return false end
  local x, y = a.v, b.v
  if a.t == 'n' then x, y = tonumber(x), tonumber(y) end
  if op == '<' then return x < y elseif op == '<=' then return x <= y
  elseif op == '>' then return x > y end
  return x >= y
end

-- Each step of an expression, for each candidate, counts as work (codec.lua `spend`): a long
-- `||` chain over a long array multiplies the two.
eval_filter = function(e, node)
  spend(1)
  local k = e.k
  if k == 'and' then return eval_filter(e.l, node) and eval_filter(e.r, node) end
  if k == 'or' then return eval_filter(e.l, node) or eval_filter(e.r, node) end
  if k == 'not' then return not eval_filter(e.e, node) end
  if k == 'exists' then return operand_value(e.o, node) ~= nil end
  return compare(e.op, operand_value(e.l, node), operand_value(e.r, node))
end
