-- topicUpdate: changes a URL group atomically (concurrent endpoint edits must not lose writes).
--
--@keys topic topics
-- ARGV[1] op: add | remove | headers  ARGV[2] now  ARGV[3] group name  ARGV[4] JSON argument
-- ARGV[5] most endpoints a group may have (add)
--   add: endpoints [{name?, url}] (created if missing; same name, or same url without name, is
--   updated); remove: endpoints [{name?, url?}] (group deleted with its last endpoint);
--   headers: {header: [values]} default publish headers.
-- Returns the group JSON, '' when deleted, urlGroupMissing when the group does not exist
-- (remove, headers), or tooManyEndpoints (nothing changed) when an add would pass ARGV[5].
--@include codes
local op, now, name = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local arg = cjson.decode(ARGV[4])
local raw = redis.call('GET', KEYS[1])
local g
if raw then
  g = cjson.decode(raw)
elseif op == 'add' then
  g = {name = name, createdAt = now, endpoints = {}, headers = {}}
else
  return Code.urlGroupMissing
end
g.updatedAt = now
local function same(a, b)
  if b.name ~= nil and b.name ~= cjson.null and b.name ~= '' then return a.name == b.name end
  return a.url == b.url
end
if op == 'add' then
  for _, ep in ipairs(arg) do
    local found = false
    for i, cur in ipairs(g.endpoints) do
      if same(cur, ep) then g.endpoints[i] = ep; found = true end
    end
    if not found then g.endpoints[#g.endpoints + 1] = ep end
  end
  if #g.endpoints > tonumber(ARGV[5]) then return Code.tooManyEndpoints end
elseif op == 'remove' then
  local kept = {}
  for _, cur in ipairs(g.endpoints) do
    local drop = false
    for _, ep in ipairs(arg) do if same(cur, ep) then drop = true end end
    if not drop then kept[#kept + 1] = cur end
  end
  if #kept == 0 then
    redis.call('DEL', KEYS[1])
    redis.call('SREM', KEYS[2], name)
    return ''
  end
  g.endpoints = kept
else
  g.headers = arg
end
local out = cjson.encode(g)
redis.call('SET', KEYS[1], out)
redis.call('SADD', KEYS[2], name)
return out
