import type { Arg, Reply } from "../../shared/redis/resp.js";
import type { CommandTable } from "../commands/policy.js";
import type { Emulation, EmulationOptions } from "./emulation.js";
import { JSON_EMULATION } from "../json/route.js";
import { ARRAY_EMULATION } from "./array-route.js";
import { HASH_EMULATION } from "./hash-route.js";
import type { LuaScript } from "../../shared/lua/script.js";
import { NameCache } from "../fast/name-cache.js";
import { BITOP_EMULATION, STREAM_EMULATION } from "./streams-route.js";
import { COPYING_EMULATION } from "./copying-route.js";

/**
 * The commands stashd runs as Lua scripts of its own (docs/compatibility.md, "Emulated
 * commands"): each emulation says which commands it takes on a given backend and how they map
 * onto its script's KEYS and ARGV. The call is `EVALSHA sha numkeys keys… args…` (EVALSHA_RO
 * with the script's no-writes variant for reads), or EVAL with the text (`by` = "text").
 */
export interface EmulatedRoute {
  readonly argv: Arg[];
  readonly script: LuaScript;
  readonly name: string;
  readonly emulation: Emulation;
}

const EMULATIONS: readonly Emulation[] = [
  JSON_EMULATION,
  HASH_EMULATION,
  STREAM_EMULATION,
  BITOP_EMULATION,
  ARRAY_EMULATION,
  // Last: the commands above that it also names (BITOP's newer operations) are theirs.
  COPYING_EMULATION,
];

/**
 * Per field-TTL option (off, on): whether any emulation may claim a command of that name
 * (`mayClaim`). Most commands are claimed by none, and asking every emulation (each
 * lower-casing the name) cost about 6% of a 100-command pipeline's CPU. A non-ASCII name may
 * lower-case, as `claims` decodes it, to an ASCII one: it is always asked.
 */
const claimable = [false, true].map(
  (fieldTtl) =>
    new NameCache<boolean>(
      (name, table, nonAscii) =>
        nonAscii || EMULATIONS.some((e) => e.mayClaim(name, table, { fieldTtl })),
    ),
);

/** Whether any emulation may take a command of this name (false: findEmulation finds none). */
export function mayEmulate(name: Arg, table: CommandTable, options: EmulationOptions): boolean {
  return claimable[options.fieldTtl ? 1 : 0]?.get(name, table) ?? true;
}

/** The emulation that takes argv on this backend, with the command's name, or undefined. */
export function findEmulation(
  argv: readonly Arg[],
  table: CommandTable,
  options: EmulationOptions,
): [Emulation, string] | undefined {
  const first = argv[0];
  if (first === undefined || !mayEmulate(first, table, options)) return undefined;
  for (const emulation of EMULATIONS) {
    const name = emulation.claims(argv, table, options);
    if (name !== undefined) return [emulation, name];
  }
  return undefined;
}

/** The script call for an emulated command, or an error reply for a malformed one. */
export function routeEmulated(
  emulation: Emulation,
  name: string,
  argv: readonly Arg[],
  by: "sha" | "text",
): EmulatedRoute | Reply {
  const call = emulation.call(name, argv);
  if (!("keys" in call)) return call;
  const { scripts } = emulation;
  const script =
    (call.frees ? scripts.frees : undefined) ??
    (call.read ? scripts.read : undefined) ??
    scripts.write;
  return { argv: script.command(by, call.keys, call.args), script, name, emulation };
}
