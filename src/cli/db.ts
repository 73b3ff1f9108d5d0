import { credentialsOf } from "../kv/databases/database-manager.js";
import {
  createDatabase,
  deleteDatabase,
  readRegistry,
  resetPassword,
} from "../kv/databases/registry.js";
import { AppError, messageOf } from "../shared/errors.js";
import { redact } from "../shared/log.js";
import { parseRedisUrl, RedisConnection } from "../shared/redis/connection.js";
import type { Invocation } from "./main.js";

export async function runDb(inv: Invocation): Promise<number> {
  const { dataDir } = inv.config();
  const sub = inv.cmd.name.split(" ")[1];
  const name = inv.args[0] ?? "";
  if (sub === "list") return listDatabases(dataDir, inv.values.json === true);
  if (sub === "create") return create(inv, dataDir, name);
  if (name === "default" && !inv.values.force) {
    throw new AppError(
      "conflict",
      sub === "delete"
        ? "`default` is the database your .env's UPSTASH_REDIS_REST_TOKEN opens: deleting it " +
            "removes its data too (it comes back empty, with new tokens, at the next start). " +
            "Add --force to do it."
        : "resetting `default`'s password revokes the tokens every client of it uses. Add --force to do it.",
    );
  }
  if (sub === "reset-password") {
    const creds = credentialsOf(resetPassword(dataDir, name));
    process.stdout.write(
      `reset database ${name}: the old tokens are revoked\ntoken: ${creds.token}\nread-only token: ${creds.readonlyToken}\n`,
    );
    return 0;
  }
  deleteDatabase(dataDir, name);
  process.stdout.write(
    `deleted database ${name}${name === "default" ? " (recreated empty at the next start)" : ""}\n`,
  );
  return 0;
}

function listDatabases(dataDir: string, json: boolean): number {
  const dbs = readRegistry(dataDir).map((r) => ({
    name: r.name,
    backend: r.redisUrl ? "external" : "managed",
    createdAt: r.createdAt,
  }));
  process.stdout.write(
    json
      ? `${JSON.stringify(dbs, null, 2)}\n`
      : dbs.map((d) => `${d.name}\t${d.backend}\t${d.createdAt}`).join("\n") + "\n",
  );
  return 0;
}

async function create(inv: Invocation, dataDir: string, name: string): Promise<number> {
  const redisUrl = inv.values["redis-url"];
  if (typeof redisUrl === "string" && inv.values["max-data-size"] !== undefined) {
    throw new AppError(
      "bad_request",
      "--max-data-size applies to managed databases: set maxmemory on that Redis instead",
    );
  }
  if (typeof redisUrl === "string" && inv.values["eviction"] === true) {
    throw new AppError(
      "bad_request",
      "--eviction applies to managed databases: set maxmemory-policy on that Redis instead",
    );
  }
  if (typeof redisUrl === "string" && !inv.values["no-check"]) {
    await checkReachable(redisUrl, inv.config().redisConnectTimeoutMs);
  }
  const record = createDatabase(dataDir, name, {
    ...(typeof redisUrl === "string" ? { redisUrl } : {}),
    ...wholeNumber("maxRequestBytes", "max-request-size", inv.values["max-request-size"]),
    ...wholeNumber("maxDataBytes", "max-data-size", inv.values["max-data-size"]),
    ...wholeNumber("dailyRequestLimit", "daily-request-limit", inv.values["daily-request-limit"]),
    ...wholeNumber("scriptTimeLimitMs", "script-time-limit", inv.values["script-time-limit"]),
    ...(inv.values["allow-migrate"] === true ? { allowMigrate: true } : {}),
    ...(inv.values["eviction"] === true ? { eviction: true } : {}),
    ...(inv.values["stop-unkillable-scripts"] === true ? { stopUnkillableScripts: true } : {}),
  });
  const creds = credentialsOf(record);
  process.stdout.write(
    `created database ${name}\ntoken: ${creds.token}\nread-only token: ${creds.readonlyToken}\n`,
  );
  return 0;
}

/** Connects (with the URL's credentials) and sends PING; throws saying why not. */
async function checkReachable(url: string, timeoutMs: number): Promise<void> {
  const endpoint = parseRedisUrl(url);
  let conn: RedisConnection | undefined;
  try {
    conn = await RedisConnection.open(endpoint, timeoutMs);
    const reply = await conn.send(["PING"]);
    if (reply.kind === "error") throw new Error(reply.value);
  } catch (err) {
    throw new AppError(
      "bad_request",
      `cannot use ${redact(url)}: ${messageOf(err)}. Nothing was saved; fix the URL, or add ` +
        "--no-check to save it anyway (for a Redis that is not up yet).",
    );
  } finally {
    conn?.destroy();
  }
}

function wholeNumber<K extends string>(
  key: K,
  flag: string,
  raw: string | boolean | undefined,
): { [P in K]?: number } {
  if (typeof raw !== "string") return {};
  const n = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(n)) {
    throw new AppError(
      "bad_request",
      `option --${flag} is ${JSON.stringify(raw)}, expected a whole number from 0 to ${Number.MAX_SAFE_INTEGER}`,
    );
  }
  return { [key]: n } as { [P in K]?: number };
}
