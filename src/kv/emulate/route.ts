import type { Arg, Reply } from "../../shared/redis/resp.js";
import type { CommandTable } from "../policy.js";
import type { Emulation, EmulationOptions } from "./emulation.js";
import { JSON_EMULATION } from "../json/route.js";
import { HASH_EMULATION } from "./hash-route.js";
import type { LuaScript } from "../../shared/lua/script.js";
import { BITOP_EMULATION, STREAM_EMULATION } from "./streams-route.js";

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
];

/** The emulation that takes argv on this backend, with the command's name, or undefined. */
export function findEmulation(
  argv: readonly Arg[],
  table: CommandTable,
  options: EmulationOptions,
): [Emulation, string] | undefined {
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
  const script = (call.read ? emulation.scripts.read : undefined) ?? emulation.scripts.write;
  return { argv: script.command(by, call.keys, call.args), script, name, emulation };
}
