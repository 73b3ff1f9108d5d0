import type { Arg } from "../../shared/redis/resp.js";
import { arityError, arityOk, type Emulation } from "./emulation.js";
import { LuaScript } from "../../shared/lua/script.js";

const STREAM_SCRIPT = LuaScript.fromFile(new URL("./lua/streams.lua", import.meta.url));
const BITOP_SCRIPT = LuaScript.fromFile(new URL("./lua/bitop.lua", import.meta.url));

const lower = (a: Arg | undefined): string => a?.toString().toLowerCase() ?? "";

/** Redis 8.2's stream commands, with their arity. */
const ADDED: Record<string, number> = { xdelex: -5, xackdel: -6 };

/** The stream keys of `XREADGROUP GROUP g c [COUNT n] [NOACK] STREAMS k… id…`, if well formed. */
function readGroupKeys(argv: readonly Arg[]): Arg[] | undefined {
  const at = argv.findIndex((a, i) => i > 3 && lower(a) === "streams");
  if (at < 0) return undefined;
  const rest = argv.slice(at + 1);
  if (rest.length === 0 || rest.length % 2 !== 0) return undefined;
  return rest.slice(0, rest.length / 2);
}

/**
 * XDELEX and XACKDEL (Redis 8.2) when the backend lacks them, and `XREADGROUP … NOACK` on any
 * backend: Upstash leaves no consumer behind for a NOACK read, Redis creates one.
 */
export const STREAM_EMULATION: Emulation = {
  scripts: { write: STREAM_SCRIPT },

  claims(argv, table) {
    const name = lower(argv[0]);
    if (Object.hasOwn(ADDED, name)) return table.has(name) ? undefined : name;
    if (name !== "xreadgroup" || !argv.some((a, i) => i > 3 && lower(a) === "noack")) {
      return undefined;
    }
    return readGroupKeys(argv) ? name : undefined;
  },

  mayClaim(name) {
    return Object.hasOwn(ADDED, name) || name === "xreadgroup";
  },

  call(name, argv) {
    const arity = ADDED[name];
    if (arity !== undefined && !arityOk(arity, argv.length)) return arityError(name);
    const keys = name === "xreadgroup" ? (readGroupKeys(argv) as Arg[]) : [argv[1] as Arg];
    return { keys, args: [name, ...argv.slice(1)], read: false };
  },
};

const NEW_OPS = new Set(["diff", "diff1", "andor", "one"]);

/** BITOP's operations added in Redis 8.2, on a backend older than that (no XDELEX either). */
export const BITOP_EMULATION: Emulation = {
  scripts: { write: BITOP_SCRIPT },

  claims(argv, table) {
    if (lower(argv[0]) !== "bitop" || !NEW_OPS.has(lower(argv[1]))) return undefined;
    return table.has("xdelex") ? undefined : "bitop";
  },

  mayClaim(name, table) {
    return name === "bitop" && !table.has("xdelex");
  },

  call(name, argv) {
    if (argv.length < 4) return arityError(name);
    return { keys: argv.slice(2), args: [lower(argv[1])], read: false };
  },
};
