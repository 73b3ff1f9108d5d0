import { LuaScript } from "../../shared/lua/script.js";
import type { Arg, Reply } from "../../shared/redis/resp.js";
import type { CommandTable } from "../policy.js";

/**
 * Maps a JSON.* command onto the JSON scripts (lua/json-write.lua, lua/json-read.lua) when the
 * backend has no JSON module: `JSON.SET k $ v NX` → `EVALSHA <write sha> 1 k json.set $ v NX`.
 * Reads go to the read script, flagged no-writes, with EVALSHA_RO. `text` mode sends the script
 * text instead (EVAL/EVAL_RO), which also loads it into Redis's script cache (see batch.ts for
 * when each is used).
 */
export const READ_SCRIPT = LuaScript.fromFile(new URL("./lua/json-read.lua", import.meta.url));
export const WRITE_SCRIPT = LuaScript.fromFile(new URL("./lua/json-write.lua", import.meta.url));

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

export interface JsonRoute {
  readonly argv: Arg[];
  readonly script: LuaScript;
  readonly name: string;
}

/** True when stashd must provide the JSON group itself (the backend has no json.set). */
export function emulatesJson(table: CommandTable): boolean {
  return !table.has("json.set");
}

/** The lower-case JSON command name when argv is one stashd provides, else undefined. */
export function jsonCommandName(argv: readonly Arg[]): string | undefined {
  const name = argv[0]?.toString().toLowerCase() ?? "";
  return READS.has(name) || WRITES.has(name) ? name : undefined;
}

const arityError = (name: string): Reply => ({
  kind: "error",
  value: `ERR wrong number of arguments for '${name}' command`,
});

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

/** The script that runs a JSON command: the read-only variant for reads. */
export function scriptFor(name: string): LuaScript {
  return READS.has(name) ? READ_SCRIPT : WRITE_SCRIPT;
}

/** The script call for a JSON command, or an error reply for a malformed one. */
export function routeJson(
  name: string,
  argv: readonly Arg[],
  by: "sha" | "text",
): JsonRoute | Reply {
  const split = keysAndArgs(name, argv);
  if (!split) return arityError(name);
  const [keys, args] = split;
  const script = scriptFor(name);
  return { argv: script.command(by, keys, [name, ...args]), script, name };
}
