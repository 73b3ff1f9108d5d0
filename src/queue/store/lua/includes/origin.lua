-- origin: the delivery origin of a message, the unit of the per-destination share (see
-- delivery/destination-share.ts, whose `originOf` must agree: test/queue/lua-contracts.test.ts).
-- urlOrigin(url): scheme://authority, ASCII-lowercased; a URL without `scheme://` is its own
-- origin. metaOrigin(meta): the origin of a stored meta JSON's `url`, the first string field of
-- that name (domain/build.ts writes it before the headers). insertMessage stores it in the
-- message hash's `origin` field, so a claim reads that short field instead of the meta.
local function urlOrigin(url)
  return string.lower(string.match(url, '^%a[%w+.-]*://[^/?#]*') or url)
end

local function metaOrigin(meta)
  return urlOrigin(string.match(meta, '"url":"(.-)"') or '')
end
