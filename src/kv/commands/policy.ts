import { ELEMENT_OVERHEAD_BYTES, type Arg, type Reply } from "../../shared/redis/resp.js";
import { blockingForm } from "./blocking.js";
import { scriptSourceRefusal } from "./rewrite.js";
import { sortPatternRefusal } from "./sort-patterns.js";
import { decidedByName, namesWith } from "./traits.js";

/**
 * What the gateway refuses, derived from the backend's own `COMMAND` table (flags and ACL
 * categories of commands and subcommands) plus a few human decisions below. Refused commands
 * never reach a pooled connection, so no request can leave one blocked, subscribed, inside MULTI,
 * in the Lua debugger, logged in as another user or on another database, nor stop the server.
 * The full list and its reasons: docs/compatibility.md, "Refused commands".
 */
export interface CommandInfo {
  /** Redis's arity: N exactly N arguments (name included), -N at least N. */
  readonly arity: number;
  readonly flags: ReadonlySet<string>;
  readonly categories: ReadonlySet<string>;
}

export type CommandTable = ReadonlyMap<string, CommandInfo>;

/**
 * Parses the RESP2 reply of `COMMAND` into name → flags and categories; subcommands (Redis 7+)
 * are entered as `container|sub` (`script|debug`).
 */
export function parseCommandTable(reply: Reply): CommandTable {
  const table = new Map<string, CommandInfo>();
  if (reply.kind === "array") addEntries(table, reply.value);
  return table;
}

function addEntries(table: Map<string, CommandInfo>, entries: readonly Reply[]): void {
  for (const entry of entries) {
    if (entry.kind !== "array") continue;
    const [name, arity, flags, , , , categories, , , subcommands] = entry.value;
    if (name?.kind !== "bulk" && name?.kind !== "simple") continue;
    table.set(name.value.toString().toLowerCase(), {
      arity: arity?.kind === "int" ? Number(arity.value) : 0,
      flags: new Set(textsOf(flags)),
      categories: new Set(textsOf(categories).map((c) => c.replace(/^@/, ""))),
    });
    if (subcommands?.kind === "array") addEntries(table, subcommands.value);
  }
}

function textsOf(reply: Reply | undefined): string[] {
  if (reply?.kind !== "array") return [];
  return reply.value.flatMap((r) =>
    r.kind === "simple" || r.kind === "bulk" ? [r.value.toString()] : [],
  );
}

/* The names each rule applies to come from the command-traits table (traits.ts). */
const CONNECTION_ALLOWED = namesWith("harmless-connection");
const PUBSUB_ALLOWED = namesWith("publish-only");
const CONNECTION_STATE = namesWith("connection-state");
const ADMIN_REFUSED = namesWith("shared-server");
const STREAM_ONLY = namesWith("stream-only");
const CROSS_DATABASE = namesWith("cross-database");
const CROSS_DATABASE_OPTION = namesWith("cross-database-option");
const OTHER_HOST = namesWith("other-host");
const MANAGED_CONFIG = namesWith("managed-config");
const RESERVED_USERS_CHECKED = namesWith("reserved-users");
const COUNTED_PICKS = namesWith("counted-picks");
const OFFSET_WRITES = namesWith("offset-write");
const SCRIPT_SOURCES = namesWith("script-source");
const SUMMED_KEYS = namesWith("summed-keys");
const SORT_PATTERNS = namesWith("sort-patterns");
/**
 * Where the keys of a "summed-keys" command are: from `from` to the end, or, with `count`, the
 * number at argv[count] of them from `from`; with `streams`, the first half of what follows the
 * STREAMS keyword (XREAD's keys, then as many ids).
 */
const KEY_LISTS: Readonly<Record<string, { from: number; count?: number; streams?: true }>> = {
  xread: { from: 1, streams: true },
  xreadgroup: { from: 4, streams: true }, // after GROUP <group> <consumer>
  sunion: { from: 1 },
  sinter: { from: 1 },
  sdiff: { from: 1 },
  pfcount: { from: 1 },
  "json.mget": { from: 1 }, // the path last: one more name, never a repeat that matters
  sunionstore: { from: 2 },
  sinterstore: { from: 2 },
  sdiffstore: { from: 2 },
  pfmerge: { from: 2 },
  bitop: { from: 3 },
  sintercard: { from: 2, count: 1 },
  zunion: { from: 2, count: 1 },
  zinter: { from: 2, count: 1 },
  zdiff: { from: 2, count: 1 },
  zintercard: { from: 2, count: 1 },
  zunionstore: { from: 3, count: 2 },
  zinterstore: { from: 3, count: 2 },
  zdiffstore: { from: 3, count: 2 },
};
/** How many times, beyond the first, a summed-keys command may name its keys again. */
const MAX_REPEATED_KEYS = 8;
/**
 * Subcommands that change a connection's mode with no flag to say so: the Lua debugger takes
 * the connection over (and with YES forks a child that outlives the request).
 */
const MODE_CHANGING = new Set([...namesWith("lua-debugger")].map((name) => `${name}|debug`));
/**
 * Commands and subcommands flagged `admin` that stay allowed: ACL management (RESTTOKEN users),
 * reading the configuration, diagnostics. Every other `admin` one (SAVE, PFDEBUG, CLIENT PAUSE,
 * …) is refused, and so is everything flagged `no_multi` (SYNC, PSYNC, SAVE, SHUTDOWN: they take
 * over the connection or stop the server).
 */
const ADMIN_ALLOWED =
  /^(acl\|.*|config\|get|config\|resetstat|latency\|.*|slowlog\|.*|bgsave|bgrewriteaof|module\|list)$/;
/** Subcommands of CONFIG that would change the managed server's files or password. */
const CONFIG_REFUSED = new Set(["set", "rewrite"]);
/** ACL users that stashd itself logs in as. */
const RESERVED_ACL_USERS = new Set(["default", "default_ro", "stashd_standard"]);

const notInRest = (name: string): string =>
  `ERR Command "${name}" is not allowed in REST or it has a special context path`;
const notAvailable = (name: string, why: string): string =>
  `ERR Command is not available: '${name}'. ${why}`;

/** Per-database choices that change what is refused. */
export interface PolicyOptions {
  /** MIGRATE makes Redis connect to any host and send it keys; off unless the database says so. */
  allowMigrate?: boolean;
  /**
   * Where a blocking command would run: "shared", a pooled connection (refused: the default);
   * "exclusive", the request's own connection (blocking.ts), where those whose timeouts stashd
   * knows how to cut are served; "transaction", inside MULTI, where Redis never blocks.
   */
  blocking?: "shared" | "exclusive" | "transaction";
  /** The database's reply limit (STASHD_KV_MAX_REPLY_BYTES): bounds counted picks (below). */
  maxReplyBytes?: number;
  /** The largest string an offset write may make (STASHD_KV_MAX_RECORD_BYTES). */
  maxRecordBytes?: number;
}

/** Why the gateway refuses this command, or undefined when it may run. */
export function refusalOf(
  argv: readonly Arg[],
  table: CommandTable,
  opts: PolicyOptions = {},
): string | undefined {
  const first = argv[0];
  if (first === undefined) return "ERR empty command";
  const name = first.toString().toLowerCase();
  const upper = name.toUpperCase();
  const info = table.get(name);
  if (ADMIN_REFUSED.has(name) || STREAM_ONLY.has(name)) {
    return STREAM_ONLY.has(name)
      ? notInRest(upper)
      : notAvailable(upper, "It would affect the server every token shares.");
  }
  if (CROSS_DATABASE.has(name) || (CROSS_DATABASE_OPTION.has(name) && crossDatabaseCopy(argv))) {
    return notAvailable(upper, "It reaches another database number of the server.");
  }
  if (OTHER_HOST.has(name) && !opts.allowMigrate) {
    return notAvailable(
      upper,
      "It makes the server connect to another host; enable it per database with `stashd db create --allow-migrate`.",
    );
  }
  if (info?.categories.has("transaction")) return notInRest(upper) + "; use /multi-exec";
  if (
    CONNECTION_STATE.has(name) ||
    (info?.categories.has("connection") && !CONNECTION_ALLOWED.has(name))
  ) {
    return notInRest(upper);
  }
  if (info?.categories.has("pubsub") && !PUBSUB_ALLOWED.has(name))
    return notInRest(upper) + "; use /subscribe or /psubscribe";
  if (info?.flags.has("blocking")) {
    const why = blockingRefusal(name, argv, opts.blocking ?? "shared");
    if (why !== undefined) return notAvailable(upper, why);
  }
  if (OFFSET_WRITES.has(name) && opts.maxRecordBytes !== undefined) {
    const bytes = offsetWriteBytes(name, argv);
    if (bytes > opts.maxRecordBytes) return "ERR max single record size exceeded";
  }
  if (SCRIPT_SOURCES.has(name)) {
    const why = scriptSourceRefusal(name, argv);
    if (why !== undefined) return why;
  }
  if (SORT_PATTERNS.has(name)) {
    const why = sortPatternRefusal(upper, argv);
    if (why !== undefined) return why;
  }
  if (SUMMED_KEYS.has(name)) {
    const why = repeatRefusal(name, upper, argv);
    if (why !== undefined) return why;
  }
  if (COUNTED_PICKS.has(name) && opts.maxReplyBytes !== undefined) {
    const why = pickRefusal(upper, argv, opts.maxReplyBytes);
    if (why !== undefined) return why;
  }
  return serverRefusal(name, argv, table) ?? subcommandRefusal(name, argv);
}

/**
 * The length a string reaches at least when SETRANGE, SETBIT or BITFIELD (its SET and INCRBY)
 * write at their offsets: Redis zero-fills up to the offset, so `SETBIT k 4294967295 1`, 30 bytes
 * of request, allocates 512 MB. 0 when the arguments are not numbers (Redis answers those).
 */
function offsetWriteBytes(name: string, argv: readonly Arg[]): number {
  const num = (i: number): number => Number(argv[i]?.toString());
  if (name === "setrange") return num(2) + (argv[3]?.length ?? 0) || 0;
  if (name === "setbit") return Math.floor(num(2) / 8) + 1 || 0;
  let most = 0;
  for (let i = 2; i + 2 < argv.length; i++) {
    const op = argv[i]?.toString().toLowerCase();
    if (op !== "set" && op !== "incrby") continue;
    const width = Number(argv[i + 1]?.toString().slice(1)); // i8 … u63
    const at = argv[i + 2]?.toString() ?? "";
    const bit = at.startsWith("#") ? Number(at.slice(1)) * width : Number(at);
    const end = Math.floor((bit + width - 1) / 8) + 1;
    if (Number.isFinite(end)) most = Math.max(most, end);
    i += 3;
  }
  return most;
}

/**
 * The keys a "summed-keys" command (lower-case `name`) names, in order, repeats included;
 * undefined when its key count or STREAMS keyword is missing or wrong (Redis answers that).
 */
export function summedKeysOf(name: string, argv: readonly Arg[]): Arg[] | undefined {
  const where = KEY_LISTS[name];
  if (where === undefined) return undefined;
  let end = argv.length;
  let from = where.from;
  if (where.streams) {
    const at = argv.findIndex((a, i) => i >= from && a.toString().toLowerCase() === "streams");
    if (at < 0) return undefined;
    from = at + 1;
    end = from + Math.floor((argv.length - from) / 2);
  } else if (where.count !== undefined) {
    const n = Number(argv[where.count]?.toString());
    if (!Number.isSafeInteger(n) || n < 0) return undefined;
    end = Math.min(end, where.from + n);
  }
  return argv.slice(from, end) as Arg[];
}

/**
 * SUNION, ZUNION, PFCOUNT and the like pass over each key they name, so naming one key again
 * and again multiplies the work by the request's length, not by the data: `SUNION s s s …` with
 * 50,000 names of a 2,000-member set held Redis for 6.8 s (ZUNION 2.8 s, PFCOUNT 1.1 s), from the
 * read-only token, and the product grows with both. Repeats beyond MAX_REPEATED_KEYS are
 * refused here; the set algebra's distinct keys are held to their sizes (combined-size.ts,
 * which needs a read of Redis, so it runs at sending, not in this synchronous policy; Redis would
 * answer the same with each key named once, but for the weights and sums of ZUNION and ZINTER).
 */
function repeatRefusal(name: string, upper: string, argv: readonly Arg[]): string | undefined {
  const where = KEY_LISTS[name];
  if (where === undefined || argv.length - where.from <= MAX_REPEATED_KEYS) return undefined;
  const keys = summedKeysOf(name, argv);
  if (keys === undefined) return undefined;
  const seen = new Set<string>();
  for (const key of keys) seen.add(key.toString("latin1"));
  const repeats = keys.length - seen.size;
  if (repeats <= MAX_REPEATED_KEYS) return undefined;
  return (
    `ERR ${upper} names the same keys ${repeats} more times: at most ${MAX_REPEATED_KEYS} ` +
    "repeats, since each name is another pass over its key (name each key once)"
  );
}

/**
 * HRANDFIELD, SRANDMEMBER and ZRANDMEMBER with a negative count pick that many elements,
 * repeating, whatever the key holds: `SRANDMEMBER s -100000000` on a set of one member had Redis
 * build 10^8 elements (15 s and more with no other client served; in a script, such as the
 * hash-field TTL emulation's, past the script time limit and unkillable, so the database was
 * restarted), for a reply no database's limit could carry. Refused before Redis sees it when
 * the elements alone, at ELEMENT_OVERHEAD_BYTES each, pass the reply limit: the answer such a
 * reply gets anyway (`ERR reply too large`), minus Redis's work. A positive count is bounded by
 * the key's size, as any read is.
 */
function pickRefusal(
  upper: string,
  argv: readonly Arg[],
  maxReplyBytes: number,
): string | undefined {
  const text = argv[2]?.toString();
  if (text === undefined || !/^-\d+$/.test(text)) return undefined;
  const withValues = argv.length > 3 ? 2 : 1; // WITHVALUES / WITHSCORES: a pair per pick
  const elements = Number(text.slice(1)) * withValues;
  const most = Math.floor(maxReplyBytes / ELEMENT_OVERHEAD_BYTES);
  if (elements <= most) return undefined;
  return (
    `ERR reply too large: ${upper} with a count of ${text} answers ${elements} elements, ` +
    `more than the ${most} this database's max reply size of ${maxReplyBytes} bytes can hold ` +
    "(STASHD_KV_MAX_REPLY_BYTES)"
  );
}

/**
 * Whether a command of this name takes the fast path (`plain` in execute.ts: the policy and
 * gateway steps are skipped), whatever its arguments, the token and the database's options: the
 * backend knows it, it has no subcommands and is not flagged `blocking` (the policy reads the
 * arguments of both), every trait it has is decided by name (traits.ts), and the policy does not
 * refuse it. `name` is lower-case. Callers cache the answer per name (it scans the table).
 */
export function plainName(name: string, table: CommandTable): boolean {
  const info = table.get(name);
  if (info === undefined || info.flags.has("blocking") || !decidedByName(name)) return false;
  const container = `${name}|`;
  for (const key of table.keys()) if (key.startsWith(container)) return false;
  return refusalOf([name], table) === undefined;
}

/** Refusals derived from `admin` / `no_multi` flags, and the mode-changing subcommands. */
function serverRefusal(
  name: string,
  argv: readonly Arg[],
  table: CommandTable,
): string | undefined {
  const sub = argv[1]?.toString().toLowerCase();
  const full = sub !== undefined && table.has(`${name}|${sub}`) ? `${name}|${sub}` : name;
  const shown = full.replace("|", " ").toUpperCase();
  if (MODE_CHANGING.has(full)) {
    return notAvailable(shown, "It would change the mode of a connection other requests share.");
  }
  const flags = table.get(full)?.flags;
  if (flags?.has("no_multi") || (flags?.has("admin") && !ADMIN_ALLOWED.test(full))) {
    return notAvailable(shown, "It would affect the server every token shares.");
  }
  return undefined;
}

/** COPY's DB option writes into another database number. */
function crossDatabaseCopy(argv: readonly Arg[]): boolean {
  return argv.some((a, i) => i > 2 && a.length === 2 && a.toString().toLowerCase() === "db");
}

/**
 * Why a command flagged `blocking` may not run where `where` says, or undefined when it may
 * (XREAD and XREADGROUP only block with a BLOCK option). WAIT and WAITAOF never get here: they
 * are refused as connection-state commands.
 */
function blockingRefusal(
  name: string,
  argv: readonly Arg[],
  where: "shared" | "exclusive" | "transaction",
): string | undefined {
  const form = blockingForm(name, argv);
  if (form === "none" || where === "transaction") return undefined;
  if (form === "unknown") return "This blocking command is not supported over REST.";
  return where === "shared" ? "Blocking commands need a connection of their own." : undefined;
}

function subcommandRefusal(name: string, argv: readonly Arg[]): string | undefined {
  const sub = argv[1]?.toString().toLowerCase();
  if (MANAGED_CONFIG.has(name) && sub !== undefined && CONFIG_REFUSED.has(sub)) {
    return notAvailable(
      `CONFIG ${sub.toUpperCase()}`,
      "The server's configuration is managed by stashd.",
    );
  }
  if (RESERVED_USERS_CHECKED.has(name) && (sub === "setuser" || sub === "deluser")) {
    const reserved = argv.slice(2).find((u) => RESERVED_ACL_USERS.has(u.toString()));
    if (reserved !== undefined) {
      return `ERR ACL user '${reserved.toString()}' is reserved by stashd`;
    }
  }
  return undefined;
}
