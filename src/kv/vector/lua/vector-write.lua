#!lua
-- vector-write: the writes of a vector index (VECTOR.CREATE, ADD, DEL, DROP), each atomic with
-- its change-log entry, so every stashd process can bring its in-memory copy up to date
-- (docs/vector.md, "Storage").
--
--@keys index log
-- KEYS[1]  the index: a hash of `meta:dim`, `meta:metric`, `meta:gen`, `meta:seq` and one
--          `id:<id>` field per vector (its little-endian FP32 bytes)
-- KEYS[2]  the index's change log (a stream in the same slot): one entry `i <id> n <seq>` per
--          ADD or DEL, `seq` counting the index's writes (meta:seq) so a reader sees any gap
-- ARGV[1]  the operation: create | add | del | drop
--   create  ARGV[2] dim, ARGV[3] metric, ARGV[4] '1' for EXISTSOK, ARGV[5] a fresh generation id
--           Returns 1 (created) or 0 (EXISTSOK and the same dim and metric already there).
--   add     ARGV[2] id, ARGV[3] FP32 bytes, ARGV[4] the index's byte budget, ARGV[5] log length
--           Returns 1 (a new id) or 0 (the id's vector replaced).
--   del     ARGV[2] id, ARGV[3] log length. Returns 1 (removed) or 0 (no such id).
--   drop    Returns 1 (dropped) or 0 (no such index).
-- Errors   WRONGTYPE when KEYS[1] holds something that is not a vector index; ERR otherwise.
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
