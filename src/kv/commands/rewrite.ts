import { createHash } from "node:crypto";
import type { Arg } from "../../shared/redis/resp.js";
import { exactTrim } from "../emulate/rewrites.js";
import { namesWith } from "./traits.js";
import { withFunctionFlagsStripped } from "./function-flags.js";

/**
 * Rewrites for what popular clients send that plain Redis refuses:
 * - `#!lua flags=…,allow-key-locking` (Upstash-only flag, sent by @upstash/ratelimit ≥ 2.1): the
 *   flag is removed before Redis sees the script. Clients call EVALSHA with the SHA of the script
 *   as they wrote it, so each rewrite records original SHA → SHA Redis knows, per database.
 * - `allow-oom` is removed the same way: it would let a script write past the database's memory
 *   limit (`maxmemory`, STASHD_KV_MAX_DATA_BYTES), so a database at its limit refuses the script
 *   as it refuses any other write.
 * - FUNCTION LOAD: the same two flags are removed from `redis.register_function{…, flags = {…}}`
 *   (function-flags.ts); `allow-key-locking` is in Upstash's own examples, and Redis refuses a
 *   library that declares it.
 * - `XTRIM … ~ N` trims exactly, as Upstash does (emulate/rewrites.ts).
 * - `FLUSHALL` is `FLUSHDB`: a token empties its own database, never the other database numbers
 *   of its Redis (the ACL denies FLUSHALL inside scripts too: command-rights.ts).
 */
export class ScriptAliases {
  private readonly aliases = new Map<string, string>();
  private static readonly MAX = 10_000;

  resolve(sha: string): string {
    return this.aliases.get(sha.toLowerCase()) ?? sha;
  }

  remember(original: Buffer, normalized: Buffer): void {
    if (this.aliases.size >= ScriptAliases.MAX) this.aliases.clear();
    this.aliases.set(sha1(original), sha1(normalized));
  }
}

function sha1(data: Buffer): string {
  return createHash("sha1").update(data).digest("hex");
}

/** Shebang flags Redis never sees: Upstash's own, and the one that lifts the memory limit. */
export const STRIPPED_FLAGS: ReadonlySet<string> = new Set(["allow-key-locking", "allow-oom"]);

/** The script's `#!` line (without its line feed), or undefined when it has none. */
function shebangOf(script: Buffer): string | undefined {
  if (script[0] !== 0x23 || script[1] !== 0x21) return undefined; // "#!"
  const nl = script.indexOf(0x0a);
  return script.subarray(0, nl < 0 ? script.length : nl).toString();
}

/**
 * Why a script's source is refused: its shebang line has a quote. Redis splits that line as it
 * splits its own command lines (quotes, `\x2d` escapes), which `normalizeScript` does not, so a
 * quoted flag would reach Redis unstripped; no client quotes its flags.
 */
export function scriptSourceRefusal(name: string, argv: readonly Arg[]): string | undefined {
  const at = scriptIndex(name, argv);
  const script = at === undefined ? undefined : argv[at];
  if (script === undefined) return undefined;
  const line = shebangOf(typeof script === "string" ? Buffer.from(script) : script);
  return line !== undefined && /["']/.test(line)
    ? "ERR quotes in a script's shebang line are not accepted: write `#!lua flags=…` unquoted"
    : undefined;
}

/** The script without the stripped shebang flags, or undefined when nothing changes. */
export function normalizeScript(script: Buffer): Buffer | undefined {
  const firstLine = shebangOf(script);
  if (firstLine === undefined) return undefined;
  const nl = script.indexOf(0x0a);
  const match = /^(#!\S+)(.*)$/.exec(firstLine);
  if (!match) return undefined;
  const [, engine = "", rest = ""] = match;
  let changed = false;
  const parts = rest
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map((part) => {
      if (!part.startsWith("flags=")) return part;
      const flags = part.slice(6).split(",");
      const kept = flags.filter((f) => !STRIPPED_FLAGS.has(f));
      if (kept.length === flags.length) return part;
      changed = true;
      return `flags=${kept.join(",")}`;
    });
  if (!changed) return undefined;
  const line = [engine, ...parts].join(" ");
  return Buffer.concat([Buffer.from(line), nl < 0 ? Buffer.alloc(0) : script.subarray(nl)]);
}

/** Script argument position for the commands that carry a Lua script. */
function scriptIndex(name: string, argv: readonly Arg[]): number | undefined {
  if (name === "eval" || name === "eval_ro") return 1;
  if (name === "script" && argv[1]?.toString().toLowerCase() === "load") return 2;
  return undefined;
}

/** Bytes of the Lua script that argv carries (EVAL, EVAL_RO, SCRIPT LOAD), else 0. */
export function scriptSourceBytes(argv: readonly Arg[]): number {
  const first = argv[0];
  if (first === undefined || first.length > 7) return 0;
  const name = first.toString().toLowerCase();
  const at = scriptIndex(name, argv);
  return at === undefined ? 0 : (argv[at]?.length ?? 0);
}

/** The (lower-case) names of the commands `rewriteCommand` may change; it returns others as is. */
export const REWRITTEN_NAMES: ReadonlySet<string> = namesWith("rewritten");

/** Applies the rewrites above; returns argv unchanged (same array) when none applies. */
export function rewriteCommand(argv: Arg[], aliases: ScriptAliases): Arg[] {
  const name = argv[0]?.toString().toLowerCase() ?? "";
  const at = scriptIndex(name, argv);
  if (at !== undefined) {
    const script = argv[at];
    if (script === undefined) return argv;
    const original = typeof script === "string" ? Buffer.from(script) : script;
    const normalized = normalizeScript(original);
    if (!normalized) return argv;
    aliases.remember(original, normalized);
    const out = argv.slice();
    out[at] = normalized;
    return out;
  }
  if ((name === "evalsha" || name === "evalsha_ro") && argv[1] !== undefined) {
    const sha = argv[1].toString();
    const resolved = aliases.resolve(sha);
    if (resolved === sha) return argv;
    const out = argv.slice();
    out[1] = resolved;
    return out;
  }
  if (name === "function") return withFunctionFlagsStripped(argv);
  if (name === "xtrim") return exactTrim(argv);
  if (name === "flushall") return [Buffer.from("FLUSHDB"), ...argv.slice(1)];
  return argv;
}
