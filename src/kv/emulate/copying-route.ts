import type { Arg, Reply } from "../../shared/redis/resp.js";
import { LuaScript } from "../../shared/lua/script.js";
import { arityError, type Emulation, type ScriptCall } from "./emulation.js";

const GUARD_SCRIPT = LuaScript.fromFile(new URL("./lua/copy-guard.lua", import.meta.url));

const lower = (a: Arg | undefined): string => a?.toString().toLowerCase() ?? "";

/** How a result's size follows from its sources' (copy-guard.lua, ARGV[1]). */
type Mode = "sum" | "min" | "first" | "max" | "sort" | "restore";

/**
 * Lua's `unpack` takes at most about 8,000 values: a longer command cannot run in the guard
 * script, and is refused (naming a key more than 8 times is refused anyway: policy.ts).
 */
const MAX_GUARDED_ARGS = 7_000;

interface Guarded {
  mode: Mode;
  sources: Arg[];
  /** Keys written (the destination). */
  written: Arg[];
}

/** SORT's options that take arguments, and how many. */
const SORT_OPTION_ARGS: Readonly<Record<string, number>> = { by: 1, limit: 2, get: 1, store: 1 };

/** Where SORT's STORE option is (0: none), and whether a GET pattern reads other keys. */
function sortStore(argv: readonly Arg[]): { at: number; reads: boolean } {
  let at = 0;
  let reads = false;
  for (let i = 2; i < argv.length; i++) {
    const option = lower(argv[i]);
    const takes = SORT_OPTION_ARGS[option] ?? 0;
    if (option === "store") at = i;
    if (option === "get" && argv[i + 1]?.toString() !== "#") reads = true;
    i += takes;
  }
  return { at, reads };
}

/** GEORADIUS[BYMEMBER]'s STORE or STOREDIST destination, or undefined (a read). */
function geoStore(name: string, argv: readonly Arg[]): Arg | undefined {
  const options = name === "georadius" ? 6 : 5; // after key, longitude latitude | member, radius unit
  for (let i = argv.length - 2; i >= options; i--) {
    const option = lower(argv[i]);
    if (option === "store" || option === "storedist") return argv[i + 1];
  }
  return undefined;
}

/** ZUNIONSTORE's and the like's `numkeys` sources, or all after it when the count is bad. */
function countedKeys(argv: readonly Arg[]): Arg[] {
  const n = Number(argv[2]?.toString());
  const end = Number.isSafeInteger(n) && n >= 0 ? Math.min(argv.length, 3 + n) : argv.length;
  return argv.slice(3, end);
}

const SET_MODES: Readonly<Record<string, Mode>> = {
  sunionstore: "sum",
  sinterstore: "min",
  sdiffstore: "first",
  zunionstore: "sum",
  zinterstore: "min",
  zdiffstore: "first",
};

/** What the guard needs of a command whose result copies data, or undefined when it stores none. */
function guarded(name: string, argv: readonly Arg[]): Guarded | undefined {
  const [, first, second] = argv as (Arg | undefined)[];
  if (first === undefined || second === undefined) return undefined;
  const mode = SET_MODES[name];
  if (mode !== undefined) {
    const sources = name.startsWith("z") ? countedKeys(argv) : argv.slice(2);
    return { mode, sources, written: [first] };
  }
  switch (name) {
    case "copy":
      return { mode: "sum", sources: [first], written: [second] };
    case "zrangestore":
    case "geosearchstore":
      return { mode: "first", sources: [second], written: [first] };
    case "bitop":
      return argv[2] ? { mode: "max", sources: argv.slice(3), written: [argv[2]] } : undefined;
    case "restore":
      return { mode: "restore", sources: [], written: [first] };
    case "georadius":
    case "georadiusbymember": {
      const to = geoStore(name, argv);
      return to === undefined ? undefined : { mode: "first", sources: [first], written: [to] };
    }
    case "sort": {
      const { at, reads } = sortStore(argv);
      const to = argv[at + 1];
      if (at === 0 || to === undefined) return undefined;
      return { mode: reads ? "sort" : "first", sources: [first], written: [to] };
    }
    default:
      return undefined;
  }
}

const NAMES = new Set([
  ...Object.keys(SET_MODES),
  "copy",
  "zrangestore",
  "geosearchstore",
  "bitop",
  "restore",
  "georadius",
  "georadiusbymember",
  "sort",
]);

/**
 * On a database whose Redis has a memory limit of stashd's (`guardsCopies`: a managed one), the
 * commands whose result copies data already stored run in copy-guard.lua, which refuses one whose
 * result would not fit below `maxmemory`: Redis checks its limit only before a command, so COPY
 * of a key as large as the room left doubled it, and `SORT list GET big* STORE dest` stored a
 * 1 MB string once per element (107 MB from a 2 MB database). Only these commands pay (a script
 * call, MEMORY USAGE of each source, INFO memory: docs/benchmarks-log.md).
 */
export const COPYING_EMULATION: Emulation = {
  scripts: { write: GUARD_SCRIPT },

  claims(argv, _table, options) {
    if (options.guardsCopies !== true) return undefined;
    const name = lower(argv[0]);
    return NAMES.has(name) && guarded(name, argv) !== undefined ? name : undefined;
  },

  mayClaim(name) {
    return NAMES.has(name);
  },

  call(name, argv): ScriptCall | Reply {
    const guard = guarded(name, argv);
    if (guard === undefined) return arityError(name);
    if (argv.length > MAX_GUARDED_ARGS) {
      return {
        kind: "error",
        value: `ERR ${name.toUpperCase()} takes at most ${MAX_GUARDED_ARGS} arguments on a managed database (stashd checks the size of its result in a script)`,
      };
    }
    return {
      keys: [...guard.sources, ...guard.written],
      args: [guard.mode, String(guard.sources.length), ...argv],
      read: false,
    };
  },
};
