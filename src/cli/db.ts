import { credentialsOf } from "../kv/databases/database-manager.js";
import {
  createDatabase,
  deleteDatabase,
  readRegistry,
  resetPassword,
  settingsOf,
  updateDatabase,
  type DatabaseRecord,
  type SettingChanges,
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
  if (sub === "update") return update(inv, dataDir, name);
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
  const records = readRegistry(dataDir);
  const text = (r: DatabaseRecord): string =>
    [r.name, r.redisUrl ? "external" : "managed", r.createdAt, overridesText(r)]
      .filter(Boolean)
      .join("\t");
  const dbs = records.map((r) => ({
    ...shownSettings(r),
    backend: r.redisUrl ? "external" : "managed",
  }));
  process.stdout.write(
    json ? `${JSON.stringify(dbs, null, 2)}\n` : records.map(text).join("\n") + "\n",
  );
  return 0;
}

/** A record's settings as listings show them: no password, the Redis URL's password hidden. */
function shownSettings(record: DatabaseRecord): ReturnType<typeof settingsOf> {
  const shown = settingsOf(record);
  return shown.redisUrl === undefined ? shown : { ...shown, redisUrl: redact(shown.redisUrl) };
}

/** `max-data-size=8388608 eviction=on`: the settings a database sets itself, as CLI flags. */
function overridesText(record: DatabaseRecord): string {
  return UPDATABLE.filter(([key]) => record[key] !== undefined)
    .map(([key, flag]) => {
      const value = record[key];
      return `${flag}=${typeof value === "boolean" ? (value ? "on" : "off") : String(value)}`;
    })
    .join(" ");
}

/** The settings `db update` changes: registry field, flag, kind. */
const UPDATABLE: [keyof SettingChanges, string, "number" | "switch"][] = [
  ["maxRequestBytes", "max-request-size", "number"],
  ["maxDataBytes", "max-data-size", "number"],
  ["dailyRequestLimit", "daily-request-limit", "number"],
  ["scriptTimeLimitMs", "script-time-limit", "number"],
  ["allowMigrate", "allow-migrate", "switch"],
  ["eviction", "eviction", "switch"],
  ["stopUnkillableScripts", "stop-unkillable-scripts", "switch"],
];

/** The two settings only a managed database has (its redis-server is stashd's to configure). */
const MANAGED_ONLY = new Set<keyof SettingChanges>(["maxDataBytes", "eviction"]);

async function update(inv: Invocation, dataDir: string, name: string): Promise<number> {
  const record = readRegistry(dataDir).find((r) => r.name === name);
  if (!record) throw new AppError("not_found", `no database named ${name}`);
  const changes: SettingChanges = {};
  for (const [key, flag, kind] of UPDATABLE) {
    const raw = inv.values[flag];
    if (typeof raw !== "string") continue;
    if (record.redisUrl && MANAGED_ONLY.has(key)) {
      throw new AppError(
        "bad_request",
        `--${flag} applies to managed databases: ${name} is on an external Redis (set maxmemory and maxmemory-policy there)`,
      );
    }
    Object.assign(changes, { [key]: settingValue(flag, kind, raw) });
  }
  if (Object.keys(changes).length === 0) {
    throw new AppError(
      "bad_request",
      "nothing to change: give at least one setting (stashd db update --help)",
    );
  }
  const updated = updateDatabase(dataDir, name, changes);
  const set = overridesText(updated);
  process.stdout.write(
    `updated database ${name}${set ? `: ${set}` : ": every setting at its default"}\n` +
      "running servers apply it within STASHD_REGISTRY_POLL_MS\n",
  );
  return 0;
}

/** A flag's value: a whole number or on|off; `default` removes the database's own value. */
function settingValue(
  flag: string,
  kind: "number" | "switch",
  raw: string,
): number | boolean | null {
  const text = raw.trim().toLowerCase();
  if (text === "default") return null;
  if (kind === "number") return wholeNumber("n", flag, raw).n as number;
  if (text === "on" || text === "off") return text === "on";
  throw new AppError(
    "bad_request",
    `option --${flag} is ${JSON.stringify(raw)}, expected on, off or default`,
  );
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
