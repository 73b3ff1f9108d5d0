import type { Arg } from "../../shared/redis/resp.js";
import type { CommandTable } from "../commands/policy.js";
import { companionKey } from "./companion.js";
import { arityError, arityOk, type Emulation } from "./emulation.js";
import { LuaScript } from "../../shared/lua/script.js";

/**
 * Which commands stashd runs as its hash scripts (lua/hash-*.lua) instead of sending them:
 * - on a backend without hash-field expiration (no HEXPIRE in its COMMAND table, Redis < 7.4):
 *   the HFE commands, HGETEX/HSETEX/HGETDEL, every hash command a client can run (so a field
 *   past its deadline is never seen), RENAME/RENAMENX/COPY (which carry the deadlines),
 *   DEL/UNLINK (which delete them) and EXPIRE & co. (the deadlines expire with the hash);
 * - on any backend: `COPY k k`, which answers 0 as Upstash does (Redis refuses it).
 * `EVALSHA sha 2 key companion hget field` (4 keys for RENAME/COPY). Reads use the no-writes
 * variant with EVALSHA_RO.
 */
export const HASH_SCRIPT = {
  write: LuaScript.fromFile(new URL("./lua/hash-write.lua", import.meta.url)),
  read: LuaScript.fromFile(new URL("./lua/hash-read.lua", import.meta.url)),
  frees: LuaScript.fromFile(new URL("./lua/hash-delete.lua", import.meta.url)),
};

/** Commands Redis 7.0 does not know, with their arity (Redis's COMMAND convention). */
const ADDED: Record<string, number> = {
  hexpire: -6,
  hpexpire: -6,
  hexpireat: -6,
  hpexpireat: -6,
  httl: -5,
  hpttl: -5,
  hexpiretime: -5,
  hpexpiretime: -5,
  hpersist: -5,
  hgetex: -5,
  hsetex: -6,
  hgetdel: -5,
};
const READS = new Set([
  "hget",
  "hmget",
  "hgetall",
  "hkeys",
  "hvals",
  "hlen",
  "hexists",
  "hstrlen",
  "hscan",
  "hrandfield",
  "httl",
  "hpttl",
  "hexpiretime",
  "hpexpiretime",
]);
const NATIVE_WRITES = new Set(["hset", "hsetnx", "hmset", "hdel", "hincrby", "hincrbyfloat"]);
const KEY_MOVES = new Set(["rename", "renamenx", "copy"]);
/** Arguments a script can hand to one redis.call (Lua 5.1's C stack holds 8 000 values). */
const MAX_UNPACKED = 7_000;
/** Key commands that the companion follows: deletion and the key's own TTL. */
const KEY_DELETES = new Set(["del", "unlink"]);
const KEY_EXPIRIES = new Set(["expire", "pexpire", "expireat", "pexpireat", "persist"]);

/** True when the backend lacks hash-field expiration, so stashd provides it. */
export function emulatesFieldTtl(table: CommandTable): boolean {
  return !table.has("hexpire");
}

/** Commands Redis knows that the hash script runs while it provides field TTLs. */
function isRouted(name: string): boolean {
  return (
    READS.has(name) ||
    NATIVE_WRITES.has(name) ||
    KEY_MOVES.has(name) ||
    KEY_DELETES.has(name) ||
    KEY_EXPIRIES.has(name)
  );
}

function isCopyOntoItself(name: string, argv: readonly Arg[]): boolean {
  return name === "copy" && argv.length >= 3 && argv[1]?.toString() === argv[2]?.toString();
}

export const HASH_EMULATION: Emulation = {
  scripts: HASH_SCRIPT,

  /** `fieldTtl` false (STASHD_KV_EMULATE_FIELD_TTL=false) leaves only `COPY k k` emulated. */
  claims(argv, table, { fieldTtl }) {
    const name = argv[0]?.toString().toLowerCase() ?? "";
    if (isCopyOntoItself(name, argv)) return name;
    if (!fieldTtl || !emulatesFieldTtl(table)) return undefined;
    if (Object.hasOwn(ADDED, name)) return name;
    if (!isRouted(name)) return undefined;
    // Lua's unpack() cannot pass this many arguments on: such a command runs natively, without
    // the field TTLs (docs/compatibility.md, limits). DEL and UNLINK are sliced in the script.
    if (argv.length > MAX_UNPACKED && !KEY_DELETES.has(name)) return undefined;
    // A malformed native command goes to Redis as is, which answers with its own error.
    const arity = table.get(name)?.arity;
    return arity !== undefined && arityOk(arity, argv.length) ? name : undefined;
  },

  mayClaim(name, table, { fieldTtl }) {
    if (name === "copy") return true;
    return fieldTtl && emulatesFieldTtl(table) && (Object.hasOwn(ADDED, name) || isRouted(name));
  },

  call(name, argv) {
    const arity = ADDED[name];
    if (arity !== undefined && !arityOk(arity, argv.length)) return arityError(name);
    if (KEY_DELETES.has(name)) {
      const keys = argv.slice(1).flatMap((k) => [k, companionKey(k)]);
      return { keys, args: [name], read: false, frees: true };
    }
    const [, key, ...rest] = argv as Arg[];
    const keys: Arg[] = [key as Arg, companionKey(key as Arg)];
    if (KEY_MOVES.has(name)) {
      const dst = rest.shift() as Arg;
      keys.push(dst, companionKey(dst));
    }
    const native = (READS.has(name) && !Object.hasOwn(ADDED, name)) || NATIVE_WRITES.has(name);
    const plain = native ? "+" : ""; // see lua/includes/hash.lua, ARGV[1]
    return { keys, args: [plain + name, ...rest], read: READS.has(name), frees: name === "hdel" };
  },
};
