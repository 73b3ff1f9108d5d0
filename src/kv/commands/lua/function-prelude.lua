-- function-prelude: put before the code of a library sent with FUNCTION LOAD, on the line after
-- its shebang and joined into one line, so the library's own line numbers stay the same
-- (function-flags.ts). The library's `redis.register_function` calls are renamed to
-- `__stashd_register`, which passes them on to Redis's own without two flags:
-- `allow-key-locking` (Upstash's own, in its examples; Redis refuses a library declaring it
-- with "unknown flag given") and `allow-oom` (it would let the function write past the
-- database's max data size). While a library loads only `redis` is readable (no `type`, no
-- `ipairs`), so the table form is told from `register_function(name, callback)` by its second
-- argument. Every line is whole statements, with no comment after code (lines are joined).
-- Reply: what Redis's register_function answers.
-- luacheck: ignore __stashd_register
local __stashd_register_function = redis.register_function
local function __stashd_register(spec, callback)
  if callback ~= nil then return __stashd_register_function(spec, callback) end
  local flags = spec.flags
  if flags ~= nil then
    local kept = {}
    for i = 1, #flags do
      local flag = flags[i]
      if flag ~= 'allow-key-locking' and flag ~= 'allow-oom' then
        kept[#kept + 1] = flag
      end
    end
    spec.flags = kept
  end
  return __stashd_register_function(spec)
end
