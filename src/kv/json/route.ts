import { LuaScript } from "../../shared/lua/script.js";
import type { Arg } from "../../shared/redis/resp.js";
import { arityError, type Emulation } from "../emulate/emulation.js";
import type { CommandTable } from "../commands/policy.js";

/**
 * Maps a JSON.* command onto the JSON scripts (lua/json-write.lua, lua/json-read.lua) when the
 * backend has no JSON module: `JSON.SET k $ v NX` → `EVALSHA <write sha> 1 k json.set $ v NX`.
 * Reads go to the read script, flagged no-writes, with EVALSHA_RO. `text` mode sends the script
 * text instead (EVAL/EVAL_RO), which also loads it into Redis's script cache (see
 * emulate/batch.ts for when each is used).
 */
export const READ_SCRIPT = LuaScript.fromFile(new URL("./lua/json-read.lua", import.meta.url));
export const WRITE_SCRIPT = LuaScript.fromFile(new URL("./lua/json-write.lua", import.meta.url));
/** JSON.DEL and JSON.FORGET, flagged allow-oom: a full database can still delete (json-delete.lua). */
export const DELETE_SCRIPT = LuaScript.fromFile(new URL("./lua/json-delete.lua", import.meta.url));
const FREES = new Set(["json.del", "json.forget"]);

const READS = new Set([
  "json.get",
  "json.mget",
  "json.type",
  "json.strlen",
  "json.arrlen",
  "json.arrindex",
  "json.objkeys",
  "json.objlen",
  "json.resp",
]);
const WRITES = new Set([
  "json.set",
  "json.mset",
  "json.merge",
  "json.del",
  "json.forget",
  "json.numincrby",
  "json.nummultby",
  "json.strappend",
  "json.arrappend",
  "json.arrinsert",
  "json.arrpop",
  "json.arrtrim",
  "json.clear",
  "json.toggle",
]);

/** True when stashd must provide the JSON group itself (the backend has no json.set). */
export function emulatesJson(table: CommandTable): boolean {
  return !table.has("json.set");
}

/** The lower-case JSON command name when argv is one stashd provides, else undefined. */
export function jsonCommandName(argv: readonly Arg[]): string | undefined {
  const name = argv[0]?.toString().toLowerCase() ?? "";
  return READS.has(name) || WRITES.has(name) ? name : undefined;
}

/** KEYS and ARGV for the script: MGET's keys precede its path, MSET's come in triples. */
function keysAndArgs(name: string, argv: readonly Arg[]): [Arg[], Arg[]] | undefined {
  const rest = argv.slice(1);
  if (name === "json.mget") {
    if (rest.length < 2) return undefined;
    return [rest.slice(0, -1), rest.slice(-1)];
  }
  if (name === "json.mset") {
    if (rest.length < 3 || rest.length % 3 !== 0) return undefined;
    const keys = rest.filter((_, i) => i % 3 === 0);
    return [keys, rest.filter((_, i) => i % 3 !== 0)];
  }
  if (rest.length < 1) return undefined;
  return [rest.slice(0, 1), rest.slice(1)];
}

/** The JSON group as one of the gateway's emulations (emulate/route.ts sends the calls). */
export const JSON_EMULATION: Emulation = {
  scripts: { write: WRITE_SCRIPT, read: READ_SCRIPT, frees: DELETE_SCRIPT },

  claims(argv, table) {
    return emulatesJson(table) ? jsonCommandName(argv) : undefined;
  },

  mayClaim(name, table) {
    return emulatesJson(table) && (READS.has(name) || WRITES.has(name));
  },

  call(name, argv) {
    const split = keysAndArgs(name, argv);
    if (!split) return arityError(name);
    const [keys, args] = split;
    return { keys, args: [name, ...args], read: READS.has(name), frees: FREES.has(name) };
  },
};
