-- write-commands: JSON.SET, MSET, MERGE, DEL/FORGET, NUMINCRBY, NUMMULTBY. A document is saved
-- with `SET … KEEPTTL`, so a key's TTL survives edits as it does with RedisJSON.
--@include codec
--@include encode
--@include bigint
--@include path
--@include read-commands
local function save(key, doc) redis.call('SET', key, encode(doc), 'KEEPTTL') end

-- JSON.SET at the root: the old document is only checked (WRONGTYPE), not parsed, and
-- canonical input is stored as it came.
local function set_root(key, text, opt)
  local raw = redis.call('GET', key)
  if raw and not looks_json(raw) then load_doc(key) end
  if (raw and opt == 'NX') or (not raw and opt == 'XX') then return false end
  local val = decode(text)
  if G.dirty then save(key, val) else redis.call('SET', key, text, 'KEEPTTL') end
  return {ok = 'OK'}
end

local function put(m, val)
  if m.p.t == 'o' and m.p.v[m.k] == nil then m.p.k[#m.p.k + 1] = m.k end
  m.p.v[m.k] = val
end

local function set_opt(a, from)
  local opt
  for i = from, #a do
    local up = a[i]:upper()
    if (up == 'NX' or up == 'XX') and not opt then opt = up else jerr('ERR syntax error') end
  end
  return opt
end

-- SET at a non-root path, as RedisJSON: replace every match (unless NX); when nothing matched,
-- add at the static path's end (unless XX). Returns the new root, or nil when nothing changed.
-- `strict` (JSON.SET): a path whose parent does not exist is an error, as Upstash answers
-- (RedisJSON 2 answers nil; RedisJSON 1 answered this same error).
local function set_at(cp, doc, val, opt, strict)
  if opt ~= 'NX' then
    local found = eval_path(cp, doc)
    if found[1] then
      for _, m in ipairs(found) do
        if m.p then put(m, deep_copy(val)) else doc = deep_copy(val) end
      end
      return doc
    end
    if opt == 'XX' then return nil end
  end
  local targets, parents = add_targets(cp, doc)
  if strict and parents == 0 then jerr('ERR missing key at non-terminal path level') end
  for _, m in ipairs(targets) do put(m, deep_copy(val)) end
  return targets[1] and doc or nil
end

C['json.set'] = function(keys, a)
  if #a < 2 then arity('json.set') end
  local cp, opt = compile(a[1]), set_opt(a, 3)
  if cp.fixed == '$' then return set_root(keys[1], a[2], opt) end
  local doc = load_doc(keys[1])
  local val = decode(a[2])
  if not doc then
    if opt == 'XX' then return false end
    jerr('ERR new objects must be created at the root')
  end
  local out = set_at(cp, doc, val, opt, true)
  if not out then return false end
  save(keys[1], out)
  return {ok = 'OK'}
end

C['json.mset'] = function(keys, a)
  if #keys < 1 or #a ~= 2 * #keys then arity('json.mset') end
  local docs, plan = {}, {}
  for i, key in ipairs(keys) do
    if docs[key] == nil then docs[key] = load_doc(key) or false end
    local cp = compile(a[2 * i - 1])
    if cp.fixed ~= '$' and not docs[key] then
      jerr('ERR new objects must be created at the root')
    end
    plan[i] = {key = key, cp = cp, val = decode(a[2 * i])}
  end
  local touched = {}
  for _, p in ipairs(plan) do
    if p.cp.fixed == '$' then
      docs[p.key] = p.val; touched[p.key] = true
    elseif docs[p.key] then
      local out = set_at(p.cp, docs[p.key], p.val, nil)
      if out then docs[p.key] = out; touched[p.key] = true end
    end
  end
  for key in pairs(touched) do save(key, docs[key]) end
  return {ok = 'OK'}
end

-- Removes a match from its parent object or array.
local function drop(m)
  if m.p.t == 'a' then table.remove(m.p.v, m.k); return end
  m.p.v[m.k] = nil
  for i, key in ipairs(m.p.k) do if key == m.k then table.remove(m.p.k, i); break end end
end

-- RFC 7396 merge patch, as JSON.MERGE applies it.
local function merge(target, patch)
  if patch.t ~= 'o' then return deep_copy(patch) end
  if target == nil or target.t ~= 'o' then target = {t = 'o', k = {}, v = {}} end
  for _, key in ipairs(patch.k) do
    local pv = patch.v[key]
    if pv.t == 'z' then
      if target.v[key] ~= nil then
        target.v[key] = nil
        for i, k2 in ipairs(target.k) do if k2 == key then table.remove(target.k, i); break end end
      end
    else
      if target.v[key] == nil then target.k[#target.k + 1] = key end
      target.v[key] = merge(target.v[key], pv)
    end
  end
  return target
end

C['json.merge'] = function(keys, a)
  if #a ~= 3 and #a ~= 2 then arity('json.merge') end
  if #a == 3 then jerr('ERR syntax error') end
  local cp, doc = compile(a[1]), load_doc(keys[1])
  local val = decode(a[2])
  if cp.fixed == '$' then
    save(keys[1], doc and merge(doc, val) or val)
    return {ok = 'OK'}
  end
  if not doc then jerr('ERR new objects must be created at the root') end
  local found = eval_path(cp, doc)
  if not found[1] then
    local targets = add_targets(cp, doc)
    if val.t == 'z' or not targets[1] then return false end
    for _, m in ipairs(targets) do put(m, merge(nil, val)) end
  end
  for _, m in ipairs(found) do
    if not m.p then doc = merge(doc, val)
    elseif val.t == 'z' then drop(m)
    else put(m, merge(m.n, val)) end
  end
  save(keys[1], doc)
  return {ok = 'OK'}
end

-- Removes every marked node (identity set), not descending into removed ones; returns count.
local function sweep(node, marked)
  local n = 0
  if node.t == 'o' then
    local kept = {}
    for _, key in ipairs(node.k) do
      if marked[node.v[key]] then node.v[key] = nil; n = n + 1
      else kept[#kept + 1] = key; n = n + sweep(node.v[key], marked) end
    end
    node.k = kept
  elseif node.t == 'a' then
    local kept = {}
    for _, v in ipairs(node.v) do
      if marked[v] then n = n + 1 else kept[#kept + 1] = v; n = n + sweep(v, marked) end
    end
    node.v = kept
  end
  return n
end

C['json.del'] = function(keys, a)
  if #a > 1 then arity('json.del') end
  local cp, doc = compile(a[1] or '.'), load_doc(keys[1])
  if not doc then return 0 end
  if cp.fixed == '$' then redis.call('DEL', keys[1]); return 1 end
  local marked = {}
  for _, m in ipairs(eval_path(cp, doc)) do marked[m.n] = true end
  local n = sweep(doc, marked)
  if n > 0 then save(keys[1], doc) end
  return n
end
C['json.forget'] = C['json.del']

local INT_LIMIT = 9007199254740992

-- RedisJSON's rule: integer op integer (both within i64) stays an integer; anything else is a
-- double. Integers use doubles below 2^53 and exact decimal arithmetic (lua-bigint) above.
local function num_result(op, x_lex, y_lex, apply)
  local x, y = tonumber(x_lex), tonumber(y_lex)
  local r = apply(x, y)
  if not (is_int_lex(x_lex) and is_int_lex(y_lex) and in_i64(x_lex) and in_i64(y_lex)) then
    return num_node(r, false)
  end
  if math.abs(x) < INT_LIMIT and math.abs(y) < INT_LIMIT and math.abs(r) < INT_LIMIT then
    return num_node(r, true)
  end
  local exact = big_op(op, x_lex, y_lex)
  if exact then return {t = 'n', v = exact} end
  return num_node(r, false)
end

local function num_op(name, op, apply)
  return function(keys, a)
    if #a ~= 2 then arity(name) end
    local cp, by = compile(a[1]), decode(a[2])
    if by.t ~= 'n' then jerr('bad input number') end
    local doc = must_doc(keys[1])
    local res, any = each_match(cp, doc, is_t('n'), function(m)
      local node = num_result(op, m.n.v, by.v, apply)
      if m.p then put(m, node) else doc = node end
      return node.v
    end, 'does not contains a number')
    if any then save(keys[1], doc) end
    if cp.legacy then return res end
    local arr = {t = 'a', v = {}}
    for i, r in ipairs(res) do arr.v[i] = r and {t = 'n', v = r} or {t = 'z'} end
    return encode(arr)
  end
end
C['json.numincrby'] = num_op('json.numincrby', '+', function(x, y) return x + y end)
C['json.nummultby'] = num_op('json.nummultby', '*', function(x, y) return x * y end)
