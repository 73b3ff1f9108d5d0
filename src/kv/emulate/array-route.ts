import type { Arg } from "../../shared/redis/resp.js";
import { arityError, arityOk, type Emulation } from "./emulation.js";
import { LuaScript } from "../../shared/lua/script.js";

/**
 * Redis 8.8's array type (ARSET … ARINFO, 18 commands) on a backend without it: stashd's array
 * script (lua/array-*.lua; layout and limits in lua/includes/array.lua and
 * docs/compatibility.md, "Arrays"). On a backend whose COMMAND table has them they run natively.
 * `EVALSHA sha 1 key arget index`; reads use the no-writes variant with EVALSHA_RO, so the
 * read-only token may run them and never a write.
 */
export const ARRAY_SCRIPT = {
  write: LuaScript.fromFile(new URL("./lua/array-write.lua", import.meta.url)),
  read: LuaScript.fromFile(new URL("./lua/array-read.lua", import.meta.url)),
};

/** The array commands with Redis 8.8's arity (name included; -N: at least N). */
const ARITY: Record<string, number> = {
  arget: 3,
  armget: -3,
  arset: -4,
  armset: -4,
  ardel: -3,
  ardelrange: -4,
  arlen: 2,
  arcount: 2,
  argetrange: 4,
  arscan: -4,
  argrep: -6,
  arop: -5,
  arinsert: -3,
  arring: -4,
  arnext: 2,
  arseek: 3,
  arlastitems: -3,
  arinfo: -2,
};

const READS = new Set([
  "arget",
  "armget",
  "arlen",
  "arcount",
  "argetrange",
  "arscan",
  "argrep",
  "arop",
  "arnext",
  "arlastitems",
  "arinfo",
]);

export const ARRAY_EMULATION: Emulation = {
  scripts: ARRAY_SCRIPT,

  claims(argv, table) {
    const name = argv[0]?.toString().toLowerCase() ?? "";
    return Object.hasOwn(ARITY, name) && !table.has(name) ? name : undefined;
  },

  mayClaim(name, table) {
    return Object.hasOwn(ARITY, name) && !table.has(name);
  },

  call(name, argv) {
    if (!arityOk(ARITY[name] ?? 0, argv.length)) return arityError(name);
    const [, key, ...rest] = argv as Arg[];
    return { keys: [key as Arg], args: [name, ...rest], read: READS.has(name) };
  },
};
