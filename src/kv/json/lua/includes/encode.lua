-- encode: JSON serialisation: compact text as stored and replied, the INDENT / NEWLINE / SPACE
-- form of JSON.GET, deep copies and RedisJSON's type names. Strings are printed as serde_json
-- does: only `"`, `\` and control characters escaped, other bytes raw.
--@include codec
local function esc_char(c)
  if c == '"' then return '\\"' elseif c == '\\' then return '\\\\'
  elseif c == '\n' then return '\\n' elseif c == '\r' then return '\\r'
  elseif c == '\t' then return '\\t' elseif c == '\b' then return '\\b'
  elseif c == '\f' then return '\\f' end
  return string.format('\\u%04x', c:byte())
end

local function quote(s)
  if not s:find('[%z\1-\31"\\]') then return '"' .. s .. '"' end
  return '"' .. s:gsub('[%z\1-\31"\\]', esc_char) .. '"'
end

-- fmt: nil for compact, or {indent=, newline=, space=} as JSON.GET's options.
local function encode_into(node, out, fmt, depth)
  local t = node.t
  if t == 's' then out[#out + 1] = quote(node.v)
  elseif t == 'n' then out[#out + 1] = node.v
  elseif t == 'b' then out[#out + 1] = node.v and 'true' or 'false'
  elseif t == 'z' then out[#out + 1] = 'null'
  else
    local open, close, n = '[', ']', #node.v
    if t == 'o' then open, close, n = '{', '}', #node.k end
    spend(n)
    out[#out + 1] = open
    if n == 0 then out[#out + 1] = close; return end
    local nl, ind = fmt and fmt.newline or '', fmt and fmt.indent or ''
    for idx = 1, n do
      if idx > 1 then out[#out + 1] = ',' end
      out[#out + 1] = nl .. string.rep(ind, depth + 1)
      if t == 'o' then
        local key = node.k[idx]
        out[#out + 1] = quote(key) .. ':' .. (fmt and fmt.space or '')
        encode_into(node.v[key], out, fmt, depth + 1)
      else
        encode_into(node.v[idx], out, fmt, depth + 1)
      end
    end
    out[#out + 1] = nl .. string.rep(ind, depth) .. close
  end
end

-- Compact form (what is stored and what most replies carry); n is the next slot in out.
local function compact_into(node, out, n)
  local t = node.t
  if t == 's' then out[n] = quote(node.v); return n + 1 end
  if t == 'n' then out[n] = node.v; return n + 1 end
  if t == 'b' then out[n] = node.v and 'true' or 'false'; return n + 1 end
  if t == 'z' then out[n] = 'null'; return n + 1 end
  if t == 'a' then
    spend(#node.v)
    out[n] = '['; n = n + 1
    for idx, v in ipairs(node.v) do
      if idx > 1 then out[n] = ','; n = n + 1 end
      n = compact_into(v, out, n)
    end
    out[n] = ']'
    return n + 1
  end
  spend(#node.k)
  out[n] = '{'; n = n + 1
  local vals = node.v
  for idx, key in ipairs(node.k) do
    out[n] = (idx > 1 and ',' or '') .. quote(key) .. ':'
    n = compact_into(vals[key], out, n + 1)
  end
  out[n] = '}'
  return n + 1
end

local function encode(node, fmt)
  local out = {}
  if fmt then encode_into(node, out, fmt, 0) else compact_into(node, out, 1) end
  return table.concat(out)
end

local function deep_copy(node)
  if node.t == 'o' then
    spend(#node.k)
    local c = {t = 'o', k = {}, v = {}}
    for i, key in ipairs(node.k) do c.k[i] = key; c.v[key] = deep_copy(node.v[key]) end
    return c
  elseif node.t == 'a' then
    spend(#node.v)
    local c = {t = 'a', v = {}}
    for i, v in ipairs(node.v) do c.v[i] = deep_copy(v) end
    return c
  end
  local c = {}
  for key, v in pairs(node) do c[key] = v end
  return c
end

local function type_name(node)
  local t = node.t
  if t == 'o' then return 'object' elseif t == 'a' then return 'array'
  elseif t == 's' then return 'string' elseif t == 'b' then return 'boolean'
  elseif t == 'z' then return 'null' end
  if is_int_lex(node.v) then return 'integer' end
  return 'number'
end
