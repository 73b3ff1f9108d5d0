-- dispatch: runs the command ARGV[1] from the command table C with KEYS and ARGV[2..], turning
-- raised errors into error replies. The script including this declares READ_ONLY: the read
-- variant refuses every write command itself.
--@include read-commands
local READS = {['json.get'] = true, ['json.mget'] = true, ['json.type'] = true,
  ['json.strlen'] = true, ['json.arrlen'] = true, ['json.arrindex'] = true,
  ['json.objkeys'] = true, ['json.objlen'] = true, ['json.resp'] = true}

local name = ARGV[1]
local fn = C[name]
if not fn or (READ_ONLY and not READS[name]) then
  return redis.error_reply("ERR unknown command '" .. tostring(name) .. "'")
end
local args = {}
for i = 2, #ARGV do args[i - 1] = ARGV[i] end
if #KEYS < 1 then
  return redis.error_reply("ERR wrong number of arguments for '" .. name .. "' command")
end
local ok, res = pcall(fn, KEYS, args)
if ok then return res end
res = tostring(type(res) == 'table' and res.err or res)
if res:sub(1, 1) == '\0' then return redis.error_reply(res:sub(2)) end
if res:match('^[A-Z]+ ') then return redis.error_reply(res) end
return redis.error_reply('ERR ' .. res)
