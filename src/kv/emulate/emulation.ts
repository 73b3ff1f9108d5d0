import type { Arg, Reply } from "../../shared/redis/resp.js";
import type { CommandTable } from "../commands/policy.js";
import type { LuaScript } from "../../shared/lua/script.js";

/**
 * A command emulation (docs/compatibility.md, "Emulated commands"): which commands it takes on
 * a given backend, and how they map onto its Lua script's KEYS and ARGV (route.ts sends them).
 */
export interface Emulation {
  /**
   * The script for writes; `read`, flagged no-writes, for the commands `call` marks as reads;
   * `frees`, flagged allow-oom, for the commands `call` marks as only deleting (so a database at
   * its memory limit can still make room).
   */
  readonly scripts: {
    readonly write: LuaScript;
    readonly read?: LuaScript;
    readonly frees?: LuaScript;
  };
  /** The lower-case command name when this emulation runs argv on this backend. */
  claims(argv: readonly Arg[], table: CommandTable, options: EmulationOptions): string | undefined;
  /**
   * Whether `claims` may take some command of this lower-case name on this backend: false only
   * when it takes none, whatever the arguments (route.ts caches it per name, to skip `claims`).
   */
  mayClaim(name: string, table: CommandTable, options: EmulationOptions): boolean;
  /** The script's KEYS and ARGV for the command, or an error reply for a malformed one. */
  call(name: string, argv: readonly Arg[]): ScriptCall | Reply;
}

export interface EmulationOptions {
  /** STASHD_KV_EMULATE_FIELD_TTL. */
  readonly fieldTtl: boolean;
  /**
   * The database's Redis has a memory limit of stashd's (a managed database): commands whose
   * result copies stored data run in a script that checks it fits (copying-route.ts).
   */
  readonly guardsCopies?: boolean;
}

export interface ScriptCall {
  readonly keys: Arg[];
  readonly args: Arg[];
  readonly read: boolean;
  /** The command only deletes keys: it runs the emulation's `frees` script when there is one. */
  readonly frees?: boolean;
}

/** Redis's arity convention: N means exactly N arguments (name included), -N at least N. */
export function arityOk(arity: number, argc: number): boolean {
  return arity >= 0 ? argc === arity : argc >= -arity;
}

export const arityError = (name: string): Reply => ({
  kind: "error",
  value: `ERR wrong number of arguments for '${name}' command`,
});
