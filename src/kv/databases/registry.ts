import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import path from "node:path";
import { AppError } from "../../shared/errors.js";
import { readJsonFile, withFileLock, writeJsonFile } from "../../shared/files.js";
import { parseRedisUrl } from "../../shared/redis/connection.js";

/**
 * The KV database registry: `<dataDir>/kv/databases.json`, shared by the CLI and running servers.
 * The CLI edits it; a running server notices changes (see `DatabaseManager`) and applies them.
 * Each database has a password from which its tokens are derived (see tokens.ts); a database
 * without `redisUrl` is managed: stashd runs its redis-server under `<dataDir>/kv/redis/<name>`.
 */
export interface DatabaseRecord {
  name: string;
  /** Secret that the database's tokens derive from; rotating it revokes every token. */
  password: string;
  /** External Redis; absent for a managed database. */
  redisUrl?: string;
  /** Per-database override of STASHD_KV_MAX_REQUEST_BYTES. */
  maxRequestBytes?: number;
  /** Per-database override of STASHD_KV_MAX_DATA_BYTES (a managed database's `maxmemory`). */
  maxDataBytes?: number;
  /** Per-database override of STASHD_KV_DAILY_REQUEST_LIMIT (0 = off). */
  dailyRequestLimit?: number;
  /** Per-database override of STASHD_KV_SCRIPT_TIME_LIMIT_MS. */
  scriptTimeLimitMs?: number;
  /**
   * MIGRATE makes Redis open a connection to any host and send it keys: refused unless set
   * (`db create --allow-migrate`).
   */
  allowMigrate?: boolean;
  /**
   * A managed database evicts keys at its max data size instead of refusing writes, as Upstash's
   * eviction option does for caches (`db create --eviction`; managed-limits.ts says which keys).
   */
  eviction?: boolean;
  /**
   * Whether a script that cannot be killed (it wrote) and runs past the time limit and the grace
   * (STASHD_KV_UNKILLABLE_SCRIPT_GRACE_MS) ends with SHUTDOWN NOSAVE of the Redis. Unset: yes for
   * a managed database (stashd restarts it), no for an external one, which stashd must not stop
   * unless asked (`db create --stop-unkillable-scripts`).
   */
  stopUnkillableScripts?: boolean;
  createdAt: string;
}

const NAME = /^[a-zA-Z0-9][a-zA-Z0-9_-]{0,62}$/;

export function registryFile(dataDir: string): string {
  return path.join(dataDir, "kv", "databases.json");
}

export function managedDir(dataDir: string, name: string): string {
  return path.join(dataDir, "kv", "redis", name);
}

export function readRegistry(dataDir: string): DatabaseRecord[] {
  const data = readJsonFile(registryFile(dataDir));
  if (data === undefined) return [];
  if (!Array.isArray(data)) {
    throw new AppError("invalid_config", `${registryFile(dataDir)} is not a JSON array`);
  }
  return data as DatabaseRecord[];
}

function writeRegistry(dataDir: string, records: DatabaseRecord[]): void {
  writeJsonFile(registryFile(dataDir), records);
}

export function newPassword(): string {
  return randomBytes(32).toString("base64url");
}

const OPTIONAL_FIELDS = [
  "redisUrl",
  "maxRequestBytes",
  "maxDataBytes",
  "dailyRequestLimit",
  "scriptTimeLimitMs",
  "allowMigrate",
  "eviction",
  "stopUnkillableScripts",
] as const;

export type CreateOptions = Partial<Pick<DatabaseRecord, (typeof OPTIONAL_FIELDS)[number]>>;

export function createDatabase(
  dataDir: string,
  name: string,
  opts: CreateOptions = {},
): DatabaseRecord {
  if (!NAME.test(name)) {
    throw new AppError(
      "bad_request",
      `database name ${JSON.stringify(name)} must be 1-63 letters, digits, - or _`,
    );
  }
  if (opts.redisUrl !== undefined) parseRedisUrl(opts.redisUrl);
  return withFileLock(registryFile(dataDir), () => addRecord(dataDir, name, opts));
}

function addRecord(dataDir: string, name: string, opts: CreateOptions): DatabaseRecord {
  const records = readRegistry(dataDir);
  if (records.some((r) => r.name === name)) {
    throw new AppError("conflict", `database ${name} already exists`);
  }
  const record: DatabaseRecord = {
    name,
    password: newPassword(),
    createdAt: new Date().toISOString(),
  };
  for (const field of OPTIONAL_FIELDS) {
    if (opts[field] !== undefined) Object.assign(record, { [field]: opts[field] });
  }
  writeRegistry(dataDir, [...records, record]);
  return record;
}

/** Per-database settings `db update` may change (undefined: keep; null: back to the default). */
export type SettingChanges = {
  [K in Exclude<(typeof OPTIONAL_FIELDS)[number], "redisUrl">]?: DatabaseRecord[K] | null;
};

/**
 * Changes a database's settings in the registry; running servers see the file change and apply
 * them (database-manager.ts: sizes and eviction with CONFIG SET on a managed Redis).
 */
export function updateDatabase(
  dataDir: string,
  name: string,
  changes: SettingChanges,
): DatabaseRecord {
  return withFileLock(registryFile(dataDir), () => {
    const records = readRegistry(dataDir);
    const record = findOrThrow(records, name);
    for (const [field, value] of Object.entries(changes)) {
      if (value === null) Reflect.deleteProperty(record, field);
      else if (value !== undefined) Object.assign(record, { [field]: value });
    }
    writeRegistry(dataDir, records);
    return record;
  });
}

/** A record's settings without its secret, for listings. */
export function settingsOf(record: DatabaseRecord): Omit<DatabaseRecord, "password"> {
  const shown: Partial<DatabaseRecord> = { ...record };
  delete shown.password;
  return shown as Omit<DatabaseRecord, "password">;
}

export function resetPassword(dataDir: string, name: string): DatabaseRecord {
  return withFileLock(registryFile(dataDir), () => {
    const records = readRegistry(dataDir);
    const record = findOrThrow(records, name);
    record.password = newPassword();
    writeRegistry(dataDir, records);
    return record;
  });
}

/** Removes the database; a managed database's data is deleted too. */
export function deleteDatabase(dataDir: string, name: string): void {
  const record = withFileLock(registryFile(dataDir), () => {
    const records = readRegistry(dataDir);
    const found = findOrThrow(records, name);
    writeRegistry(
      dataDir,
      records.filter((r) => r !== found),
    );
    return found;
  });
  // Retried: the running server may still write into the directory until stashd stops it.
  if (!record.redisUrl) {
    rmSync(managedDir(dataDir, name), { recursive: true, force: true, maxRetries: 10 });
  }
}

function findOrThrow(records: DatabaseRecord[], name: string): DatabaseRecord {
  const record = records.find((r) => r.name === name);
  if (!record) throw new AppError("not_found", `no database named ${name}`);
  return record;
}
