import { LoginRefusedError, RedisConnection } from "../../shared/redis/connection.js";
import type { RedisBackend } from "../../shared/redis/backend.js";
import type { Arg, Reply } from "../../shared/redis/resp.js";
import type { Interrupts } from "../../shared/http/interrupts.js";
import type { Principal } from "../databases/database.js";
import { mintAclToken } from "../databases/tokens.js";
import { QUEUE_KEY_PREFIX, patternAvoidsPrefix } from "./command-rights.js";
import { namesWith } from "./traits.js";
import { isVectorCommand, vectorCommand } from "../vector/commands.js";
import { isSearchCommand, searchCommand } from "../search/commands.js";

/**
 * Upstash-only commands that the gateway answers itself, outside transactions:
 * - `ACL RESTTOKEN user password`: checks the credentials with AUTH on a fresh connection and
 *   mints a token that runs as that ACL user;
 * - `SCAN … WITHTYPE`: SCAN, then TYPE of each key, answered as `[cursor, [key, type, …]]`. Plain
 *   commands rather than a script, so ACL refusals name SCAN/TYPE and an ACL user allowed those
 *   may use it. Inside /multi-exec the SCAN is queued without WITHTYPE and `addKeyTypes` runs
 *   on its reply after EXEC (the one implementation for both paths).
 * - the other `ACL` subcommands and `CONFIG` for the standard token: its ACL user may run neither
 *   (command-rights.ts), so they run on stashd's own connection, checked here: `ACL SETUSER` gets
 *   the policy's ceiling appended and may not touch stashd's users; `CONFIG GET` hides passwords.
 *   Other tokens run them as their own ACL user, which Redis checks.
 * - `SEARCH.*`: Upstash's search commands, served from search/ (docs/search.md).
 *
 * `client` tells a handler that the request's client went away: SEARCH.* and VECTOR.* queries
 * then give up their place on the compute scheduler (search/scheduler.ts).
 */
export type GatewayHandler = (p: Principal, argv: Arg[], client?: Interrupts) => Promise<Reply>;

const errorReply = (value: string): Reply => ({ kind: "error", value });
const lower = (a: Arg | undefined): string | undefined => a?.toString().toLowerCase();

export function isRestToken(argv: readonly Arg[]): boolean {
  return argv.length >= 2 && lower(argv[0]) === "acl" && lower(argv[1]) === "resttoken";
}

export function isScanWithType(argv: readonly Arg[]): boolean {
  return lower(argv[0]) === "scan" && argv.some((a, i) => i > 0 && lower(a) === "withtype");
}

/** The names of the commands above (traits.ts, "gateway"); any other is never served here. */
const GATEWAY_NAMES = namesWith("gateway");

export function gatewayCommand(argv: readonly Arg[]): GatewayHandler | undefined {
  const name = lower(argv[0]);
  if (name === undefined || !GATEWAY_NAMES.has(name)) return undefined;
  if (isRestToken(argv)) return restToken;
  if (isScanWithType(argv)) return scanWithType;
  // Upstash's module commands that stashd serves itself, on any Redis.
  if (isVectorCommand(argv)) return vectorCommand;
  if (isSearchCommand(argv)) return searchCommand;
  if (name === "acl") return aclCommand;
  if (name === "config") return configCommand;
  return undefined;
}

/** Why a command the gateway serves itself cannot be queued in a transaction, if it is one. */
export function servedOutsideTransactions(argv: readonly Arg[]): string | undefined {
  if (isVectorCommand(argv)) {
    return "ERR VECTOR.* commands are not allowed in a transaction on stashd (docs/vector.md)";
  }
  const name = lower(argv[0]);
  if (isSearchCommand(argv)) return `ERR ${name?.toUpperCase()} is not allowed in a transaction`;
  if (name !== "acl" && name !== "config") return undefined;
  const words = [name, lower(argv[1])].filter((w) => w !== undefined);
  return `ERR ${words.join(" ").toUpperCase()} is not allowed in a transaction`;
}

async function restToken(p: Principal, argv: Arg[]): Promise<Reply> {
  if (argv.length !== 4) {
    return errorReply("ERR wrong number of arguments for 'acl|resttoken' command");
  }
  const username = (argv[2] as Arg).toString();
  const password = (argv[3] as Arg).toString();
  if (p.role === "readonly") {
    return errorReply("NOPERM the read-only token cannot mint ACL tokens (ACL RESTTOKEN)");
  }
  if (p.db.isReservedUser(username)) return reservedUser(username);
  // Checked before the password is tried (429 with Retry-After), counted only on failure.
  p.db.restTokenGuesses.check(username);
  const login = () => RedisConnection.open({ ...p.db.endpoint, username, password }, 5_000);
  try {
    (await p.db.limits.withSlot(login)).destroy();
  } catch (err) {
    if (err instanceof LoginRefusedError) {
      p.db.restTokenGuesses.fail(username);
      return errorReply(`ERR Wrong password or user "${username}" does not exist`);
    }
    throw err;
  }
  p.db.restTokenGuesses.succeed(username);
  const token = mintAclToken(p.db.record.password, { username, password });
  return { kind: "bulk", value: Buffer.from(token) };
}

/** SCAN's arguments without the Upstash-only WITHTYPE. */
export function withoutWithType(argv: readonly Arg[]): Arg[] {
  return argv.filter((a, i) => i === 0 || lower(a) !== "withtype");
}

async function scanWithType(p: Principal, argv: Arg[]): Promise<Reply> {
  const pool = p.db.poolFor(p);
  return addKeyTypes(pool, await pool.exec(withoutWithType(argv)));
}

/** SCAN's reply `[cursor, [key, …]]` as `[cursor, [key, type, …]]` (TYPE of each key). */
export async function addKeyTypes(
  pool: Pick<RedisBackend, "execMany">,
  scan: Reply,
): Promise<Reply> {
  if (scan.kind !== "array") return scan;
  const [cursor, keys] = scan.value;
  if (!cursor || keys?.kind !== "array") return scan;
  const types = await pool.execMany(
    keys.value.map((k) => ["TYPE", (k as { value: Buffer }).value]),
  );
  const failed = types.find((t) => t.kind === "error");
  if (failed) return failed;
  const flat = keys.value.flatMap((k, i) => [k, types[i] as Reply]);
  return { kind: "array", value: [cursor, { kind: "array", value: flat }] };
}

const reservedUser = (name: string): Reply =>
  errorReply(`ERR ACL user '${name}' is reserved by stashd`);

/** ACL subcommands for the standard token that only read users or help: run as they come. */
const ACL_READS = new Set(["list", "getuser", "users", "cat", "genpass", "log", "dryrun", "help"]);

async function aclCommand(p: Principal, argv: Arg[]): Promise<Reply> {
  const reply = await aclCommandAsAsked(p, argv);
  const sub = lower(argv[1]);
  if (reply.kind === "error" || (sub !== "setuser" && sub !== "deluser")) return reply;
  return saveAclUsers(p, reply);
}

/**
 * ACL SAVE after users changed, so they outlive a restart of the database's Redis: a managed
 * server keeps them in its ACL file (managed-acl-file.ts), and a failed save is the reply. An
 * external Redis keeps them only if its operator gave it an `aclfile`: its refusal is ignored.
 */
async function saveAclUsers(p: Principal, changed: Reply): Promise<Reply> {
  const saved = await p.db.serverAdmin.exec(["ACL", "SAVE"]);
  if (saved.kind !== "error" || !p.db.isManaged) return changed;
  return errorReply(
    `ERR the users changed, but Redis could not save them (${saved.value}): the change lasts until the database's Redis restarts`,
  );
}

async function aclCommandAsAsked(p: Principal, argv: Arg[]): Promise<Reply> {
  if (p.role !== "standard") return p.db.poolFor(p).exec(argv);
  const sub = lower(argv[1]) ?? "";
  const admin = p.db.serverAdmin;
  if (sub === "getuser" && argv[2] !== undefined && p.db.isReservedUser(argv[2].toString())) {
    return reservedUser(argv[2].toString());
  }
  if (sub === "list") return withoutReservedUsers(p, await admin.exec(argv));
  if (sub === "whoami" || ACL_READS.has(sub)) return admin.exec(argv);
  if (sub === "deluser") {
    const reserved = argv.slice(2).find((u) => p.db.isReservedUser(u.toString()));
    return reserved ? reservedUser(reserved.toString()) : admin.exec(argv);
  }
  if (sub === "setuser") return setUser(p, argv);
  return errorReply(
    `ERR Command is not available: 'ACL ${sub.toUpperCase()}'. The server's users are managed by stashd.`,
  );
}

/**
 * ACL LIST without stashd's own users: their lines hold password hashes (`#<sha256>`), and the
 * Redis URL's password may be weak enough to guess offline.
 */
function withoutReservedUsers(p: Principal, reply: Reply): Reply {
  if (reply.kind !== "array") return reply;
  const value = reply.value.filter((line) => {
    const name = line.kind === "bulk" ? /^user (\S+)/.exec(line.value.toString())?.[1] : undefined;
    return name === undefined || !p.db.isReservedUser(name);
  });
  return { kind: "array", value };
}

/**
 * `ACL SETUSER name rules…` as the token asked, then the ceiling (command-rights.ts), so the user
 * never holds a right the policy refuses. Selectors are refused (the ceiling cannot reach into
 * them), and so, on a Redis shared with the queue, are key patterns that could name its keys.
 */
async function setUser(p: Principal, argv: Arg[]): Promise<Reply> {
  const name = argv[2]?.toString();
  if (name === undefined)
    return errorReply("ERR wrong number of arguments for 'acl|setuser' command");
  if (p.db.isReservedUser(name)) return reservedUser(name);
  const rules = argv.slice(3).map((r) => r.toString());
  const refused = rules.map((r) => ruleRefusal(p, r)).find((why) => why !== undefined);
  if (refused !== undefined) return errorReply(refused);
  await p.db.commandTable();
  const ceiling = p.db.aclCeiling ?? [];
  return p.db.serverAdmin.exec(["ACL", "SETUSER", name, ...rules, ...ceiling]);
}

function ruleRefusal(p: Principal, rule: string): string | undefined {
  if (rule.startsWith("(")) {
    return "ERR ACL selectors are not supported through stashd: give the user's rules without (…)";
  }
  const prefix = p.db.sharesRedisWithQueue ? QUEUE_KEY_PREFIX : undefined;
  if (prefix === undefined) return undefined;
  const lowered = rule.toLowerCase();
  const pattern = /^%(r|w|rw)~/.exec(lowered) ? rule.slice(rule.indexOf("~") + 1) : undefined;
  const keys = rule.startsWith("~") ? rule.slice(1) : pattern;
  if (lowered === "allkeys" || (keys !== undefined && !patternAvoidsPrefix(keys, prefix))) {
    return `ERR key pattern '${rule}' could name the queue's keys (${prefix}…), which share this Redis: give patterns that start with another literal prefix`;
  }
  return undefined;
}

/** CONFIG parameters whose values are secrets: CONFIG GET shows them empty. */
const SECRET_CONFIG = new Set([
  "requirepass",
  "masterauth",
  "tls-key-file-pass",
  "tls-client-key-file-pass",
]);

async function configCommand(p: Principal, argv: Arg[]): Promise<Reply> {
  if (p.role !== "standard") return p.db.poolFor(p).exec(argv);
  const reply = await p.db.serverAdmin.exec(argv);
  if (lower(argv[1]) !== "get" || reply.kind !== "array") return reply;
  const value = reply.value.map((item, i) => {
    const key = reply.value[i - 1];
    const secret = i % 2 === 1 && key?.kind === "bulk" && SECRET_CONFIG.has(key.value.toString());
    return secret ? { kind: "bulk" as const, value: Buffer.alloc(0) } : item;
  });
  return { kind: "array", value };
}
