import { readFileSync } from "node:fs";
import type { Arg, Reply } from "../../shared/redis/resp.js";
import type { Principal } from "../databases/database.js";

/**
 * The flags of Lua functions (FUNCTION LOAD), which are Lua values, not a shebang line stashd can
 * read as it reads an EVAL script's (rewrite.ts):
 * - `withFunctionFlagsStripped` puts lua/function-prelude.lua before the library's code, on its
 *   second line, and renames its `redis.register_function` calls to the prelude's, which drops
 *   `allow-key-locking` (Upstash's; Redis refuses it) and `allow-oom` (it would let the function
 *   write past the database's max data size) from the flags.
 * - A library that names the function otherwise (`redis['register_' .. 'function']`) still
 *   reaches Redis with its flags: `dropOomLibraries` then deletes every library with an
 *   `allow-oom` function right after the load, and the load's reply says so. Between the two a
 *   call of it can run; its growth is held by the script memory watch (script-memory.ts).
 */

/** The prelude as one line (comments dropped, lines joined): the library's lines keep their numbers. */
const PRELUDE = readFileSync(new URL("./lua/function-prelude.lua", import.meta.url), "utf8")
  .split("\n")
  .map((line) => line.trim())
  .filter((line) => line !== "" && !line.startsWith("--"))
  .join(" ");

const REGISTER_CALL = /\bredis\s*\.\s*register_function\b/g;

/** FUNCTION LOAD with the prelude in its code; any other command (FUNCTION LIST…) as it is. */
export function withFunctionFlagsStripped(argv: Arg[]): Arg[] {
  if (argv[1]?.toString().toLowerCase() !== "load" || argv.length < 3) return argv;
  const at = argv.length - 1;
  const code = (argv[at] as Arg).toString();
  const nl = code.indexOf("\n");
  if (!code.startsWith("#!") || nl < 0) return argv;
  const body = code.slice(nl + 1);
  if (body.search(REGISTER_CALL) < 0) return argv;
  const renamed = body.replace(REGISTER_CALL, "__stashd_register");
  const out = argv.slice();
  out[at] = `${code.slice(0, nl + 1)}${PRELUDE} ${renamed}`;
  return out;
}

/** Whether a command (re)defines functions: FUNCTION LOAD or FUNCTION RESTORE. */
export function definesFunctions(argv: readonly Arg[]): boolean {
  if (argv[0]?.toString().toLowerCase() !== "function") return false;
  const sub = argv[1]?.toString().toLowerCase();
  return sub === "load" || sub === "restore";
}

/**
 * Deletes the libraries named (every one when `only` is undefined: after a RESTORE) that have a
 * function flagged `allow-oom`, on stashd's own connection; answers their names. FUNCTION LIST's
 * reply: per library a flat map with `library_name` and `functions`, each function a flat map
 * with `name` and `flags`.
 */
export async function dropOomLibraries(
  p: Principal,
  only?: ReadonlySet<string>,
): Promise<string[]> {
  const admin = p.db.serverAdmin;
  const list = await admin.exec(["FUNCTION", "LIST"]);
  if (list.kind !== "array") return [];
  const dropped: string[] = [];
  for (const library of list.value) {
    const name = field(library, "library_name");
    const functions = field(library, "functions");
    if (name?.kind !== "bulk" || functions?.kind !== "array") continue;
    if (only && !only.has(name.value.toString())) continue;
    if (!functions.value.some(declaresAllowOom)) continue;
    await admin.exec(["FUNCTION", "DELETE", name.value]);
    dropped.push(name.value.toString());
  }
  return dropped;
}

/** The error a FUNCTION LOAD or RESTORE is answered with when its libraries were dropped. */
export function oomLibrariesRefusal(names: readonly string[]): Reply {
  return {
    kind: "error",
    value: `ERR functions may not be flagged allow-oom (it would let them write past the database's max data size): library ${names.join(", ")} was deleted`,
  };
}

function declaresAllowOom(fn: Reply): boolean {
  const flags = field(fn, "flags");
  if (flags?.kind !== "array") return false;
  return flags.value.some(
    (f) => f.kind !== "array" && f.kind !== "nil" && `${f.value}` === "allow-oom",
  );
}

/** The value after `key` in a flat [key, value, …] array reply. */
function field(map: Reply, key: string): Reply | undefined {
  if (map.kind !== "array") return undefined;
  for (let i = 0; i + 1 < map.value.length; i += 2) {
    const k = map.value[i] as Reply;
    if ((k.kind === "bulk" || k.kind === "simple") && k.value.toString() === key) {
      return map.value[i + 1];
    }
  }
  return undefined;
}

/**
 * After an exchange that held FUNCTION LOAD or RESTORE (at `at` in `replies`): drops the
 * libraries they defined that are flagged `allow-oom`, and answers those commands with the error.
 */
export async function refuseOomFunctions(
  p: Principal,
  at: readonly number[],
  replies: (Reply | undefined)[],
): Promise<void> {
  const loaded = at.filter((i) => replies[i] !== undefined && replies[i]?.kind !== "error");
  if (loaded.length === 0) return;
  const names = loaded.map((i) => replies[i]).filter((r) => r?.kind === "bulk");
  // A RESTORE answers OK and may define any library: then every one is looked at.
  const only =
    names.length === loaded.length ? new Set(names.map((r) => `${r?.value}`)) : undefined;
  const dropped = await dropOomLibraries(p, only);
  if (dropped.length === 0) return;
  for (const i of loaded) replies[i] = oomLibrariesRefusal(dropped);
}
