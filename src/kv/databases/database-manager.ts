import { hash } from "node:crypto";
import type { Config } from "../../config/schema.js";
import { AppError, messageOf } from "../../shared/errors.js";
import { fileStamp } from "../../shared/files.js";
import type { Logger } from "../../shared/log.js";
import { parseRedisUrl, type RedisEndpoint } from "../../shared/redis/connection.js";
import { ManagedRedis } from "../../shared/redis/managed.js";
import { managedLimits } from "./managed-limits.js";
import { KvDatabase, type Principal, type RedisSharing } from "./database.js";
import {
  createDatabase,
  managedDir,
  readRegistry,
  registryFile,
  type DatabaseRecord,
} from "./registry.js";
import { deriveToken, isAclToken, openAclToken } from "./tokens.js";

export interface DatabaseCredentials {
  name: string;
  token: string;
  readonlyToken: string;
}

/** ACL tokens opened recently (each opening is an AES-GCM decryption); cleared when full. */
const MAX_ACL_TOKENS = 1024;

/**
 * Keeps the running databases in step with the registry file: on start, and whenever the CLI
 * changes it (polled by mtime), databases are added (managed ones get their redis-server),
 * removed, or re-keyed (a password reset revokes the old tokens at once). Also answers "which
 * database and role does this token belong to".
 *
 * Token lookup is constant-time in the token's bytes: the presented token is hashed with
 * SHA-256 (about 1 µs) and the digest is looked up in a Map built when the registry is applied.
 * Whatever the Map's comparison reveals through timing is about the digest, which tells nothing
 * of a token's bytes, so a client cannot guess a token byte by byte. The cache of opened ACL
 * tokens is keyed the same way.
 */
export class DatabaseManager {
  private readonly dbs = new Map<string, KvDatabase>();
  private tokens = new Map<string, Principal>();
  private aclTokens = new Map<string, Principal>();
  /** fileStamp of the registry as last applied. */
  private stamp = "";
  private syncing: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly config: Config,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    if (readRegistry(this.config.dataDir).length === 0) {
      createDatabase(
        this.config.dataDir,
        "default",
        this.config.kvRedisUrl ? { redisUrl: this.config.kvRedisUrl } : {},
      );
    }
    await this.sync();
    this.timer = setInterval(() => void this.syncIfChanged(), this.config.registryPollMs);
    this.timer.unref();
  }

  /** The principal a token stands for, or undefined. */
  authenticate(token: string | undefined): Principal | undefined {
    if (!token) return undefined;
    const digest = digestOf(token);
    const known = this.tokens.get(digest) ?? this.aclTokens.get(digest);
    if (known || !isAclToken(token)) return known;
    for (const db of this.dbs.values()) {
      const acl = openAclToken(db.record.password, token);
      if (!acl) continue;
      if (this.aclTokens.size >= MAX_ACL_TOKENS) this.aclTokens.clear();
      const principal: Principal = { db, role: "acl", acl };
      this.aclTokens.set(digest, principal);
      return principal;
    }
    return undefined;
  }

  credentials(): DatabaseCredentials[] {
    return [...this.dbs.values()].map((db) => credentialsOf(db.record));
  }

  get(name: string): KvDatabase | undefined {
    return this.dbs.get(name);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.syncing;
    await Promise.all([...this.dbs.values()].map((db) => db.close()));
    this.dbs.clear();
    this.tokens.clear();
    this.aclTokens.clear();
  }

  private syncIfChanged(): Promise<void> {
    if (fileStamp(registryFile(this.config.dataDir)) === this.stamp) return this.syncing;
    return this.sync();
  }

  /** Applies the registry; serialized so overlapping calls never race. */
  private sync(): Promise<void> {
    this.syncing = this.syncing.then(() =>
      this.applyRegistry().catch((err: unknown) => {
        this.logger.error("could not apply the database registry", { err: messageOf(err) });
        throw err;
      }),
    );
    const result = this.syncing;
    this.syncing = this.syncing.catch(() => undefined);
    return result;
  }

  private async applyRegistry(): Promise<void> {
    this.stamp = fileStamp(registryFile(this.config.dataDir));
    const records = readRegistry(this.config.dataDir);
    const wanted = new Map(records.map((r) => [r.name, r]));
    for (const [name, db] of this.dbs) {
      const next = wanted.get(name);
      if (!next || next.redisUrl !== db.record.redisUrl) {
        this.dbs.delete(name);
        await db.close();
        this.logger.info("database removed", { db: name });
      } else if (next.password !== db.record.password || !sameLimits(next, db.record)) {
        const migrateChanged = next.allowMigrate !== db.record.allowMigrate;
        await this.resizeAround(db, next, () => replaceRecord(db.record, next));
        if (migrateChanged) await db.remakeUsers();
      }
    }
    for (const record of records) {
      if (!this.dbs.has(record.name)) await this.openOrReport(record);
    }
    this.tokens = indexTokens([...this.dbs.values()]);
    this.aclTokens = new Map();
  }

  /**
   * Runs `apply` (the new record taking effect) and sets the managed Redis's new sizes around it:
   * a larger argument limit before requests may carry longer arguments, a smaller one after.
   */
  private async resizeAround(
    db: KvDatabase,
    next: DatabaseRecord,
    apply: () => void,
  ): Promise<void> {
    const was = managedLimits(this.config, db.record);
    const limits = managedLimits(this.config, next);
    const changed = JSON.stringify(was) !== JSON.stringify(limits);
    if (changed && limits.maxBulkBytes >= was.maxBulkBytes) await db.applyManagedLimits(limits);
    apply();
    if (changed && limits.maxBulkBytes < was.maxBulkBytes) await db.applyManagedLimits(limits);
  }

  /**
   * Opens one database; a database that cannot start is logged and retried at the next registry
   * change instead of blocking the others. At startup (no database yet) the error is fatal.
   */
  private async openOrReport(record: DatabaseRecord): Promise<void> {
    try {
      this.dbs.set(record.name, await this.open(record));
    } catch (err) {
      if (this.dbs.size === 0 && this.timer === undefined) throw err;
      this.logger.error("database could not start", { db: record.name, err: messageOf(err) });
    }
  }

  /**
   * Who else uses an external database's Redis, judged by the URLs' servers. Refuses layouts no
   * ACL rule can make safe: the queue in the same database number (FLUSHDB would empty it) and,
   * unless allowed, another KV database on the same server (ACL key patterns cannot tell
   * database numbers apart).
   */
  private sharingOf(name: string, endpoint: RedisEndpoint): RedisSharing {
    const queueUrl = this.config.queueRedisUrl;
    const queue = queueUrl ? parseRedisUrl(queueUrl) : undefined;
    const withQueue = queue !== undefined && sameServer(queue, endpoint);
    if (withQueue && (queue.db ?? 0) === (endpoint.db ?? 0)) {
      throw new AppError(
        "invalid_config",
        `database ${name} and the queue use the same database number of one Redis: FLUSHDB from a KV token would empty the queue. Give the KV database another number (e.g. redis://…/0 for KV and /1 for STASHD_QUEUE_REDIS_URL) or another Redis`,
      );
    }
    const other = [...this.dbs.values()].find((db) => sameServer(db.endpoint, endpoint));
    if (other && other.name !== name && !this.config.kvAllowSharedRedis) {
      throw new AppError(
        "invalid_config",
        `databases ${other.name} and ${name} use the same Redis server: each one's standard token could reach the other's keys from a script. Give each database its own Redis, or accept the risk with STASHD_KV_ALLOW_SHARED_REDIS=true`,
      );
    }
    return { withQueue, queueUser: withQueue ? (queue.username ?? "default") : undefined };
  }

  private async open(record: DatabaseRecord): Promise<KvDatabase> {
    const log = this.logger.child(record.name);
    if (record.redisUrl) {
      const endpoint = parseRedisUrl(record.redisUrl);
      const sharing = this.sharingOf(record.name, endpoint);
      const db = new KvDatabase(record, endpoint, this.config, log, undefined, sharing);
      this.logger.info("database ready (external Redis)", { db: record.name });
      return db;
    }
    const managed = new ManagedRedis({
      dir: managedDir(this.config.dataDir, record.name),
      bin: this.config.redisServerBin,
      appendfsync: "everysec",
      keepAclUsers: true,
      maxRestartBackoffMs: this.config.managedRestartMaxBackoffMs,
      replyBufferLimitBytes: replyBufferLimit(this.config.kvMaxReplyBytes),
      ...managedLimits(this.config, record),
      logger: log,
    });
    const endpoint: RedisEndpoint = await managed.start();
    this.logger.info("database ready (managed redis-server)", { db: record.name });
    return new KvDatabase(record, endpoint, this.config, log, managed);
  }
}

/**
 * Room in Redis for the replies of one pooled connection: well above one request's reply cap,
 * since several requests' replies may wait on one connection (docs/reliability.md, threat model).
 */
function replyBufferLimit(maxReplyBytes: number): number {
  return Math.max(4 * maxReplyBytes, 64 * 1024 * 1024);
}

/** Whether two endpoints name one Redis server (database numbers aside). */
function sameServer(a: RedisEndpoint, b: RedisEndpoint): boolean {
  const host = (e: RedisEndpoint): string | undefined =>
    e.host === "localhost" || e.host === "::1" || e.host === "[::1]" ? "127.0.0.1" : e.host;
  return host(a) === host(b) && (a.port ?? 6379) === (b.port ?? 6379) && a.path === b.path;
}

/** Updates a running database's record in place, options removed from the file included. */
function replaceRecord(target: DatabaseRecord, next: DatabaseRecord): void {
  for (const key of Object.keys(target)) if (!(key in next)) Reflect.deleteProperty(target, key);
  Object.assign(target, next);
}

function sameLimits(a: DatabaseRecord, b: DatabaseRecord): boolean {
  return (
    a.maxRequestBytes === b.maxRequestBytes &&
    a.maxDataBytes === b.maxDataBytes &&
    a.dailyRequestLimit === b.dailyRequestLimit &&
    a.scriptTimeLimitMs === b.scriptTimeLimitMs &&
    a.allowMigrate === b.allowMigrate &&
    a.eviction === b.eviction &&
    a.stopUnkillableScripts === b.stopUnkillableScripts
  );
}

export function credentialsOf(record: DatabaseRecord): DatabaseCredentials {
  return {
    name: record.name,
    token: deriveToken(record.password, record.name, "standard"),
    readonlyToken: deriveToken(record.password, record.name, "readonly"),
  };
}

/** The key a token is looked up by: its SHA-256 digest (see DatabaseManager). */
function digestOf(token: string): string {
  return hash("sha256", token, "base64");
}

/** Token digest → principal for every database's standard and read-only token. */
function indexTokens(dbs: KvDatabase[]): Map<string, Principal> {
  const index = new Map<string, Principal>();
  for (const db of dbs) {
    const creds = credentialsOf(db.record);
    index.set(digestOf(creds.token), { db, role: "standard" });
    index.set(digestOf(creds.readonlyToken), { db, role: "readonly" });
  }
  return index;
}
