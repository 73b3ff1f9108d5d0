-- vector-ops: the body of vector-write.lua and vector-delete.lua; the contract (KEYS, ARGV,
-- replies) is in vector-write.lua's header.
local index, log, op = KEYS[1], KEYS[2], ARGV[1]
local META_FIELDS = 4 -- keys.ts META_FIELD_COUNT

local function wrong_type()
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end

-- The index's dimension, nil when the key is missing, false when it holds something else.
local function dimension()
  local t = redis.call('TYPE', index)['ok']
  if t == 'none' then return nil end
  if t ~= 'hash' then return false end
  local dim = redis.call('HGET', index, 'meta:dim')
  if not dim then return false end
  return tonumber(dim)
end

local function logged(id, maxlen)
  local seq = redis.call('HINCRBY', index, 'meta:seq', 1)
  redis.call('XADD', log, 'MAXLEN', '~', maxlen, '*', 'i', id, 'n', seq)
end

local dim = dimension()
if dim == false then return wrong_type() end

if op == 'create' then
  if dim then
    local metric = redis.call('HGET', index, 'meta:metric')
    if ARGV[4] == '1' and dim == tonumber(ARGV[2]) and metric == ARGV[3] then return 0 end
    if ARGV[4] == '1' then
      return redis.error_reply('ERR vector index exists with DIM ' .. dim .. ' METRIC ' .. metric)
    end
    return redis.error_reply('ERR vector index already exists')
  end
  redis.call('DEL', log)
  redis.call(
    'HSET', index, 'meta:dim', ARGV[2], 'meta:metric', ARGV[3], 'meta:gen', ARGV[5], 'meta:seq', 0
  )
  return 1
end

if op == 'drop' then
  if not dim then return 0 end
  redis.call('DEL', index, log)
  return 1
end

if not dim then return redis.error_reply('ERR no such vector index') end
local field = 'id:' .. ARGV[2]

if op == 'add' then
  local blob = ARGV[3]
  if #blob ~= dim * 4 then
    return redis.error_reply(
      'ERR vector has ' .. (#blob / 4) .. ' elements, the index has DIM ' .. dim
    )
  end
  local fresh = redis.call('HEXISTS', index, field) == 0
  if fresh then
    local count = redis.call('HLEN', index) - META_FIELDS
    local budget = tonumber(ARGV[4])
    if (count + 1) * dim * 4 > budget then
      return redis.error_reply(
        'ERR vector index full: ' .. count .. ' vectors of DIM ' .. dim
          .. ' fill its budget of ' .. budget .. ' bytes (STASHD_KV_VECTOR_MAX_INDEX_BYTES)'
      )
    end
  end
  redis.call('HSET', index, field, blob)
  logged(ARGV[2], ARGV[5])
  return fresh and 1 or 0
end

if op == 'del' then
  local removed = redis.call('HDEL', index, field)
  if removed == 1 then logged(ARGV[2], ARGV[3]) end
  return removed
end

return redis.error_reply('ERR unknown vector-write operation ' .. tostring(op))
