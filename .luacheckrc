-- luacheck configuration for the Lua scripts stashd runs inside Redis (`npm run check` lints each
-- script as assembled with its includes: scripts/lint-lua.ts). Redis runs Lua 5.1 with these
-- globals and libraries; scripts may not create globals.
std = "lua51"
read_globals = { "redis", "KEYS", "ARGV", "cjson", "cmsgpack", "bit", "struct" }
max_line_length = 100
