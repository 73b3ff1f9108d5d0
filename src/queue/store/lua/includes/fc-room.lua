-- fcKeysFit(from, count, maxKeys, stride): fcMetasFit (includes/fc-fit.lua) for the `count`
-- messages whose groups of `stride` ARGV (default 5: id, meta, body, dueAt, timeout; a workflow
-- step entry's group has 6, a meta of '' names no message) start at ARGV[from].
--@include fc-fit
local function fcKeysFit(from, count, maxKeys, stride)
  local metas = {}
  for n = 1, count do metas[n] = ARGV[from + (n - 1) * (stride or 5) + 1] end
  return fcMetasFit(metas, maxKeys)
end
