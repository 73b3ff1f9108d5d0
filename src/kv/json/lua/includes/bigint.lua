-- bigint: exact integer arithmetic for JSON.NUMINCRBY / NUMMULTBY beyond 2^53, where Lua's
-- doubles lose digits. Integers are decimal strings; limbs are base 1e7, little-endian, so a limb
-- product (< 1e14) plus carries stays exact in a double.
--@include codec
local BASE, BASE_DIGITS = 10000000, 7

local function big_parse(lex)
  local neg = lex:sub(1, 1) == '-'
  local d = neg and lex:sub(2) or lex
  local limbs = {}
  for e = #d, 1, -BASE_DIGITS do
    limbs[#limbs + 1] = tonumber(d:sub(math.max(1, e - BASE_DIGITS + 1), e))
  end
  return {neg = neg, l = limbs}
end

local function big_trim(l)
  while #l > 1 and l[#l] == 0 do l[#l] = nil end
  return l
end

local function big_cmp_abs(a, b)
  if #a ~= #b then return #a < #b and -1 or 1 end
  for i = #a, 1, -1 do
    if a[i] ~= b[i] then return a[i] < b[i] and -1 or 1 end
  end
  return 0
end

local function big_add_abs(a, b)
  local out, carry = {}, 0
  for i = 1, math.max(#a, #b) do
    local s = (a[i] or 0) + (b[i] or 0) + carry
    out[i], carry = s % BASE, math.floor(s / BASE)
  end
  if carry > 0 then out[#out + 1] = carry end
  return out
end

-- |a| - |b| for |a| >= |b|.
local function big_sub_abs(a, b)
  local out, borrow = {}, 0
  for i = 1, #a do
    local s = a[i] - (b[i] or 0) - borrow
    if s < 0 then s, borrow = s + BASE, 1 else borrow = 0 end
    out[i] = s
  end
  return big_trim(out)
end

local function big_add(x, y)
  if x.neg == y.neg then return {neg = x.neg, l = big_add_abs(x.l, y.l)} end
  if big_cmp_abs(x.l, y.l) >= 0 then return {neg = x.neg, l = big_sub_abs(x.l, y.l)} end
  return {neg = y.neg, l = big_sub_abs(y.l, x.l)}
end

local function big_mul(x, y)
  local out = {}
  for i = 1, #x.l + #y.l do out[i] = 0 end
  for i = 1, #x.l do
    local carry = 0
    for j = 1, #y.l do
      local cur = out[i + j - 1] + x.l[i] * y.l[j] + carry
      out[i + j - 1], carry = cur % BASE, math.floor(cur / BASE)
    end
    local k = i + #y.l
    while carry > 0 do
      local cur = out[k] + carry
      out[k], carry = cur % BASE, math.floor(cur / BASE)
      k = k + 1
    end
  end
  return {neg = x.neg ~= y.neg, l = big_trim(out)}
end

local function big_str(x)
  local parts = {tostring(x.l[#x.l])}
  for i = #x.l - 1, 1, -1 do parts[#parts + 1] = string.format('%07d', x.l[i]) end
  local s = table.concat(parts)
  if x.neg and s ~= '0' then s = '-' .. s end
  return s
end

-- Whether an integer lexeme fits i64 (RedisJSON's integer arithmetic range).
local function in_i64(lex)
  return int_within(lex, '9223372036854775808', '9223372036854775807')
end

-- Exact x op y for integer lexemes ('+' or '*'); nil when the result leaves i64 (RedisJSON
-- wraps around there; stashd answers with the double result instead).
local function big_op(op, x, y)
  local a, b = big_parse(x), big_parse(y)
  local r = big_str(op == '+' and big_add(a, b) or big_mul(a, b))
  if in_i64(r) then return r end
  return nil
end
