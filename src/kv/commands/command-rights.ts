import type { CommandTable } from "./policy.js";
import { refusalOf } from "./policy.js";

/**
 * The Redis ACL rules that make Redis itself enforce the gateway's command policy, so that a
 * script or function (EVAL, FCALL) cannot do what the same command sent over REST may not.
 *
 * The standard token runs as the ACL user `STANDARD_USER`, whose rules are derived here from the
 * backend's own COMMAND table through `refusalOf` (one source of truth): every command or
 * subcommand the policy refuses whatever its arguments, and that Redis would run inside a script,
 * is denied. Commands Redis never runs in scripts (flag `noscript`) need no ACL rule: the gateway
 * refuses them before they reach Redis. The same denials are the ceiling appended to every rule
 * list a token gives to `ACL SETUSER` (gateway-commands.ts), so no ACL user it creates can exceed
 * the standard token either.
 */

/** The queue's keys (src/queue/store/keys.ts), kept from KV tokens on a Redis both use. */
export const QUEUE_KEY_PREFIX = "stashd:{";

/** The ACL user the standard token's connections log in as. */
export const STANDARD_USER = "stashd_standard";
/** The ACL user the read-only token's connections log in as. */
export const READONLY_USER = "default_ro";

/**
 * Sent by stashd itself on the principal's connections (cluster redirections, replica reads);
 * harmless in a script. SELECT is granted for the database's own number only (see `selectRule`).
 */
const SENT_BY_GATEWAY = new Set(["asking", "readonly", "readwrite", "select"]);

/** What of the layout changes the rules. */
export interface RightsLayout {
  /** The Redis database number the token's connections select. */
  readonly dbNumber: number;
  /** MIGRATE allowed for this database (`stashd db create --allow-migrate`). */
  readonly allowMigrate: boolean;
  /** Redis checks RESTORE payloads (`sanitize-dump-payload yes`); otherwise RESTORE is denied. */
  readonly sanitizesPayloads: boolean;
  /**
   * Key prefixes of another tenant of the same Redis (the queue's `stashd:{`): no key that starts
   * with one may be named, and commands that show other tenants' traffic are denied.
   */
  readonly reservedPrefixes: readonly string[];
}

/**
 * Commands the gateway answers in another way, which must not run in a script either:
 * FLUSHALL is rewritten to FLUSHDB (a token empties its own database), SWAPDB and MOVE reach
 * other database numbers, RESTORE of an unchecked payload can crash Redis.
 */
function extraDenials(layout: RightsLayout): string[] {
  const denied = ["flushall", "swapdb", "move", "debug"];
  if (!layout.allowMigrate) denied.push("migrate");
  if (!layout.sanitizesPayloads) denied.push("restore", "restore-asking");
  // Another tenant's commands and arguments are visible in the first two; the others fork the
  // whole server (a rewrite of the queue's AOF stalls its writes).
  if (layout.reservedPrefixes.length > 0) {
    denied.push("monitor", "slowlog", "bgsave", "bgrewriteaof");
  }
  return denied;
}

/** `-name` for every command and subcommand the policy refuses that a script could run. */
export function deniedCommands(table: CommandTable, layout: RightsLayout): string[] {
  const denied = new Set(extraDenials(layout));
  const policy = { allowMigrate: layout.allowMigrate };
  for (const [name, info] of table) {
    if (info.flags.has("noscript") || hasSubcommands(name, table)) continue;
    const [top = name] = name.split("|");
    if (SENT_BY_GATEWAY.has(top) || info.flags.has("blocking")) continue; // scripts never block
    const argv = name.split("|").map((part) => Buffer.from(part));
    if (refusalOf(argv, table, policy) !== undefined) denied.add(name);
  }
  return [...denied].sort();
}

function hasSubcommands(name: string, table: CommandTable): boolean {
  if (name.includes("|")) return false;
  const container = `${name}|`;
  for (const key of table.keys()) if (key.startsWith(container)) return true;
  return false;
}

/** SELECT of the database's own number only (first-argument rules, Redis >= 7). */
function selectRules(dbNumber: number): string[] {
  return ["-select", `+select|${dbNumber}`];
}

/**
 * The rules that no token-made ACL user may exceed, appended after the token's own rules (ACL
 * rules apply in order, so later denials win): the policy's denials, SELECT of the own number,
 * and no ACL or CONFIG (they would reveal or change users and the server's password).
 */
export function ceilingRules(table: CommandTable, layout: RightsLayout): string[] {
  return [
    ...deniedCommands(table, layout).map((c) => `-${c}`),
    ...selectRules(layout.dbNumber),
    "-acl",
    "+acl|whoami",
    "-config",
  ];
}

/** The standard user's rules (without its password). */
export function standardUserRules(table: CommandTable, layout: RightsLayout): string[] {
  return [
    "reset",
    "on",
    ...keyRules(layout.reservedPrefixes),
    "&*",
    "+@all",
    ...deniedCommands(table, layout).map((c) => `-${c}`),
    ...selectRules(layout.dbNumber),
    // The gateway serves ACL and CONFIG GET for this token itself (gateway-commands.ts).
    "-acl",
    "-config",
  ];
}

/** Key patterns: every key, or every key that starts with none of the reserved prefixes. */
export function keyRules(reservedPrefixes: readonly string[]): string[] {
  if (reservedPrefixes.length === 0) return ["~*"];
  const [prefix = "", ...more] = reservedPrefixes;
  if (more.length > 0) throw new Error("keyRules: one reserved prefix at most");
  return complementPatterns(prefix).map((p) => `~${p}`);
}

/**
 * Glob patterns that together match exactly the keys (but the empty one) that do not start with
 * `prefix`: a key either is a proper prefix of it, or first differs from it at some position i
 * (`prefix[0..i)` followed by any other byte, then anything).
 */
export function complementPatterns(prefix: string): string[] {
  const patterns: string[] = [];
  for (let i = 0; i < prefix.length; i++) {
    const head = escapeGlob(prefix.slice(0, i));
    if (i > 0) patterns.push(head);
    patterns.push(`${head}[^${escapeClass(prefix.charAt(i))}]*`);
  }
  return patterns;
}

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

function escapeClass(char: string): string {
  return /[\]\\^-]/.test(char) ? `\\${char}` : char;
}

/**
 * Whether a key glob pattern can match no key that starts with `prefix`: its literal head (up to
 * the first glob character) differs from the prefix at some position both have.
 */
export function patternAvoidsPrefix(pattern: string, prefix: string): boolean {
  for (let i = 0; i < Math.min(pattern.length, prefix.length); i++) {
    const c = pattern.charAt(i);
    if (c === "*" || c === "?" || c === "[" || c === "\\") return false;
    if (c !== prefix.charAt(i)) return true;
  }
  return false;
}
