-- codec: the JSON parser of the JSON command group (for a Redis without the JSON module), in
-- Lua 5.1 as embedded in Redis. cjson is not used: it loses object key order, number lexemes and
-- big-integer precision.
--
-- Value model (every node is a distinct table, so identity marks a node):
--   {t='o', k={key...}, v={[key]=node}}  object, keys in insertion order
--   {t='a', v={node...}}                 array
--   {t='s', v=bytes}  {t='n', v=lexeme}  {t='b', v=bool}  {t='z'} (null)
-- Numbers keep their canonical lexeme (RedisJSON/serde_json form: integers as written when they
-- fit i64/u64, other numbers as the shortest round-trip double, "1.0" for integral doubles).
-- Errors are raised as error('\0' .. text) and turned into error replies by the dispatcher.
local G = {} -- G.root: the document a filter's $ refers to
local function jerr(msg) error('\0' .. msg, 0) end

-- The work one script call may do: values its paths visit or select, and values it encodes or
-- copies (into its reply or the stored text). A recursive path can ask for far more than the
-- documents hold (`$..*..*` visits each value once per ancestor: n^2 on a deep document, n^3
-- with a third `..`), and Redis serves no other client while a script runs, with the script's Lua
-- memory outside maxmemory. So a call may do WORK_FLOOR units plus one per byte of JSON text it
-- decoded (the documents read, the values given): every ordinary command on a document costs a
-- few units per value, and a value takes at least two bytes of text. Past that the call ends with
-- an error (about a tenth of a second past the floor on a small document) instead of holding
-- Redis until the script time limit (docs/json.md, Limits).
local WORK_FLOOR = 100000
local function spend(n)
  local w = (G.work or 0) + n
  G.work = w
  if w > WORK_FLOOR + (G.allowance or 0) then
    jerr('ERR JSON command too expensive: it would visit or write more values than ' ..
      (WORK_FLOOR + (G.allowance or 0)) .. ' (100000 plus one per byte of the documents read;' ..
      ' a recursive path such as $..*..* on a large document?)')
  end
end

local function fmt_float(x)
  if x ~= x or x == math.huge or x == -math.huge then jerr('ERR result is not a number') end
  if x == 0 then if 1 / x < 0 then return '-0.0' end return '0.0' end
  local s
  for p = 15, 17 do
    s = string.format('%.' .. (p - 1) .. 'e', x)
    if tonumber(s) == x then break end
  end
  local sign, d1, frac, ex = s:match('^(-?)(%d)%.?(%d*)e([-+]%d+)$')
  local dg = (d1 .. frac):gsub('0+$', '')
  if dg == '' then dg = '0' end
  local n, kk = #dg, tonumber(ex) + 1
  local k = kk - n
  if k >= 0 and kk <= 21 then return sign .. dg .. string.rep('0', k) .. '.0' end
  if kk > 0 and kk <= 21 then return sign .. dg:sub(1, kk) .. '.' .. dg:sub(kk + 1) end
  if kk > -6 and kk <= 0 then return sign .. '0.' .. string.rep('0', -kk) .. dg end
  local m = dg:sub(1, 1)
  if n > 1 then m = m .. '.' .. dg:sub(2) end
  return sign .. m .. 'e' .. (kk - 1)
end

local function is_int_lex(lex) return not lex:find('[%.eE]') end

-- Whether integer lexeme lex lies within -neg_max..pos_max (limits as digit strings).
local function int_within(lex, neg_max, pos_max)
  local neg = lex:sub(1, 1) == '-'
  local d = neg and lex:sub(2) or lex
  local lim = neg and neg_max or pos_max
  if #d ~= #lim then return #d < #lim end
  return d <= lim
end

-- Integer lexemes outside i64/u64 become doubles, as serde_json parses them.
local function fits_int(lex)
  return int_within(lex, '9223372036854775808', '18446744073709551615')
end

local function norm_num(lex)
  if is_int_lex(lex) then
    if lex == '-0' then return '-0.0' end
    if fits_int(lex) then return lex end
  end
  return fmt_float(tonumber(lex))
end

local function num_node(x, as_int)
  if as_int then return {t = 'n', v = string.format('%.0f', x)} end
  return {t = 'n', v = fmt_float(x)}
end

local function perr(s, i, what)
  local line, col = 1, 0
  local upto = math.min(i, #s + 1)
  for j = 1, upto - 1 do
    if s:byte(j) == 10 then line = line + 1; col = 0 else col = col + 1 end
  end
  if i <= #s then col = col + 1 end
  jerr(what .. ' at line ' .. line .. ' column ' .. col)
end

-- Byte codes the parser dispatches on (s:byte avoids creating one-character strings).
local B_SP, B_TAB, B_LF, B_CR = 32, 9, 10, 13
local B_LBRACE, B_RBRACE, B_LBRACK, B_RBRACK = 123, 125, 91, 93
local B_QUOTE, B_COLON, B_COMMA = 34, 58, 44

local function skip_ws(s, i)
  local b = s:byte(i)
  if b ~= B_SP and b ~= B_TAB and b ~= B_LF and b ~= B_CR then return i end
  G.dirty = true
  local _, e = s:find('^[ \t\r\n]*', i)
  return e + 1
end

local function utf8_char(cp)
  if cp < 0x80 then return string.char(cp) end
  if cp < 0x800 then return string.char(0xC0 + math.floor(cp / 64), 0x80 + cp % 64) end
  if cp < 0x10000 then
    return string.char(0xE0 + math.floor(cp / 4096), 0x80 + math.floor(cp / 64) % 64,
      0x80 + cp % 64)
  end
  return string.char(0xF0 + math.floor(cp / 262144), 0x80 + math.floor(cp / 4096) % 64,
    0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
end

local ESC = {['"'] = '"', ['\\'] = '\\', ['/'] = '/',
  b = '\b', f = '\f', n = '\n', r = '\r', t = '\t'}

local function parse_string(s, i)
  local out, n = {}, 0
  i = i + 1
  local q = s:find('["\\%z\1-\31]', i)
  if q and s:byte(q) == B_QUOTE then return s:sub(i, q - 1), q + 1 end
  G.dirty = true
  while true do
    local j = s:find('["\\%z\1-\31]', i)
    if not j then perr(s, #s + 1, 'EOF while parsing a string') end
    n = n + 1; out[n] = s:sub(i, j - 1)
    local c = s:sub(j, j)
    if c == '"' then return table.concat(out), j + 1 end
    if c ~= '\\' then
      perr(s, j, 'control character (\\u0000-\\u001F) found while parsing a string')
    end
    local e = s:sub(j + 1, j + 1)
    if ESC[e] then
      n = n + 1; out[n] = ESC[e]; i = j + 2
    elseif e == 'u' then
      local hex = s:match('^%x%x%x%x', j + 2)
      if not hex then perr(s, j + 2, 'invalid escape') end
      local cp = tonumber(hex, 16); i = j + 6
      if cp >= 0xD800 and cp < 0xDC00 then
        local lo = s:match('^\\u(%x%x%x%x)', i)
        if not lo then perr(s, i, 'unexpected end of hex escape') end
        cp = 0x10000 + (cp - 0xD800) * 1024 + (tonumber(lo, 16) - 0xDC00); i = i + 6
      end
      n = n + 1; out[n] = utf8_char(cp)
    else
      perr(s, j + 1, 'invalid escape')
    end
  end
end

local parse_value

-- Parses the members of an object or array whose opening byte is at i.
local function parse_container(s, i, obj, trusted)
  local node = obj and {t = 'o', k = {}, v = {}} or {t = 'a', v = {}}
  local close = obj and B_RBRACE or B_RBRACK
  local keys, vals, n = node.k, node.v, 0
  G.depth = G.depth + 1
  if G.depth > 128 then perr(s, i, 'recursion limit exceeded') end
  i = skip_ws(s, i + 1)
  if s:byte(i) == close then G.depth = G.depth - 1; return node, i + 1 end
  while true do
    local val
    if obj then
      -- Fast path: a plain key directly followed by ':' in one match.
      local _, e, key = s:find('^"([^"\\%z\1-\31]*)":', i)
      if e then
        i = e + 1
      else
        if s:byte(i) ~= B_QUOTE then
          if i > #s then perr(s, i, 'EOF while parsing an object') end
          perr(s, i, 'key must be a string')
        end
        key, i = parse_string(s, i)
        i = skip_ws(s, i)
        if s:byte(i) ~= B_COLON then perr(s, i, "expected ':'") end
        i = i + 1
      end
      val, i = parse_value(s, skip_ws(s, i), trusted)
      if vals[key] == nil then n = n + 1; keys[n] = key else G.dirty = true end
      vals[key] = val
    else
      val, i = parse_value(s, i, trusted)
      n = n + 1; vals[n] = val
    end
    i = skip_ws(s, i)
    local c = s:byte(i)
    if c == close then G.depth = G.depth - 1; return node, i + 1 end
    if c ~= B_COMMA then
      if i > #s then
        perr(s, i, obj and 'EOF while parsing an object' or 'EOF while parsing a list')
      end
      perr(s, i, obj and "expected ',' or '}'" or "expected ',' or ']'")
    end
    i = skip_ws(s, i + 1)
  end
end

-- trusted: s is stashd's own canonical text, so number lexemes need no normalising.
parse_value = function(s, i, trusted)
  i = skip_ws(s, i)
  local c = s:byte(i)
  if c == B_LBRACE then return parse_container(s, i, true, trusted) end
  if c == B_LBRACK then return parse_container(s, i, false, trusted) end
  if c == B_QUOTE then
    local _, e, str = s:find('^"([^"\\%z\1-\31]*)"', i)
    if e then return {t = 's', v = str}, e + 1 end
    local v, j = parse_string(s, i)
    return {t = 's', v = v}, j
  end
  if c == 116 and s:sub(i, i + 3) == 'true' then return {t = 'b', v = true}, i + 4 end
  if c == 102 and s:sub(i, i + 4) == 'false' then return {t = 'b', v = false}, i + 5 end
  if c == 110 and s:sub(i, i + 3) == 'null' then return {t = 'z'}, i + 4 end
  if trusted then
    local _, e = s:find('^-?[%d%.eE+-]+', i)
    if e then return {t = 'n', v = s:sub(i, e)}, e + 1 end
  end
  local _, e = s:find('^-?%d+', i)
  if e then
    local _, f = s:find('^%.%d+', e + 1); e = f or e
    local _, x = s:find('^[eE][-+]?%d+', e + 1); e = x or e
    local lex = s:sub(i, e)
    if trusted then return {t = 'n', v = lex}, e + 1 end
    local v = norm_num(lex)
    if v ~= lex then G.dirty = true end
    return {t = 'n', v = v}, e + 1
  end
  if i > #s then perr(s, i, 'EOF while parsing a value') end
  perr(s, i, 'expected value')
end

-- After decode, G.dirty is false when s was already canonical text (compact, numbers in
-- canonical form, no escapes, no duplicate keys), so it can be stored as it came.
local function decode(s, trusted)
  G.dirty, G.depth = false, 0
  G.allowance = (G.allowance or 0) + #s
  local v, i = parse_value(s, 1, trusted)
  i = skip_ws(s, i)
  if i <= #s then perr(s, i, 'trailing characters') end
  return v
end

