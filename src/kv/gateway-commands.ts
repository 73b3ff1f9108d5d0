import { LoginRefusedError, RedisConnection } from "../shared/redis/connection.js";
import type { RedisBackend } from "../shared/redis/backend.js";
import type { Arg, Reply } from "../shared/redis/resp.js";
import type { Principal } from "./database.js";
import { mintAclToken } from "./tokens.js";

/**
 * Upstash-only commands that the gateway answers itself, outside transactions:
 * - `ACL RESTTOKEN user password`: checks the credentials with AUTH on a fresh connection and
 *   mints a token that runs as that ACL user;
 * - `SCAN … WITHTYPE`: SCAN, then TYPE of each key, answered as `[cursor, [key, type, …]]`. Plain
 *   commands rather than a script, so ACL refusals name SCAN/TYPE and an ACL user allowed those
 *   may use it. Inside /multi-exec the SCAN is queued without WITHTYPE and `addKeyTypes` runs
 *   on its reply after EXEC (the one implementation for both paths).
 */
export type GatewayHandler = (p: Principal, argv: Arg[]) => Promise<Reply>;

const errorReply = (value: string): Reply => ({ kind: "error", value });
const lower = (a: Arg | undefined): string | undefined => a?.toString().toLowerCase();

export function isRestToken(argv: readonly Arg[]): boolean {
  return argv.length >= 2 && lower(argv[0]) === "acl" && lower(argv[1]) === "resttoken";
}

export function isScanWithType(argv: readonly Arg[]): boolean {
  return lower(argv[0]) === "scan" && argv.some((a, i) => i > 0 && lower(a) === "withtype");
}

export function gatewayCommand(argv: readonly Arg[]): GatewayHandler | undefined {
  if (isRestToken(argv)) return restToken;
  if (isScanWithType(argv)) return scanWithType;
  return undefined;
}

async function restToken(p: Principal, argv: Arg[]): Promise<Reply> {
  if (argv.length !== 4) {
    return errorReply("ERR wrong number of arguments for 'acl|resttoken' command");
  }
  const username = (argv[2] as Arg).toString();
  const password = (argv[3] as Arg).toString();
  try {
    const conn = await RedisConnection.open({ ...p.db.endpoint, username, password }, 5_000);
    conn.destroy();
  } catch (err) {
    if (err instanceof LoginRefusedError) {
      return errorReply(`ERR Wrong password or user "${username}" does not exist`);
    }
    throw err;
  }
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
