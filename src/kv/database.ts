import type { Config } from "../config/schema.js";
import { AppError } from "../shared/errors.js";
import type { Logger } from "../shared/log.js";
import type { ConnectionOptions, RedisEndpoint } from "../shared/redis/connection.js";
import type { ManagedRedis } from "../shared/redis/managed.js";
import type { RedisBackend } from "../shared/redis/backend.js";
import { BackendFactory, seedsOf } from "../shared/redis/cluster/factory.js";
import type { PoolOptions } from "../shared/redis/pool.js";
import { parseCommandTable, type CommandTable } from "./policy.js";
import type { DatabaseRecord } from "./registry.js";
import { ScriptAliases } from "./rewrite.js";
import { ScriptKiller } from "./script-killer.js";
import { readonlyUserPassword, type AclCredentials } from "./tokens.js";

/**
 * Who a request runs as: the database, and which backend user its token maps to. Built once per
 * token (database-manager.ts) and shared by every request that presents it.
 */
export interface Principal {
  readonly db: KvDatabase;
  readonly role: "standard" | "readonly" | "acl";
  readonly acl?: AclCredentials;
}

const READONLY_USER = "default_ro";
/**
 * Reads only; SCAN and KEYS are refused as Upstash's "powerful read commands"
 * (docs/redis-rest-protocol.md). TIME lets the emulated hash reads (emulate/lua/) tell which
 * fields are past their deadline. FCALL runs FCALL_RO of functions not declared no-writes
 * (emulate/fcall-ro.ts): the ACL still refuses every write command inside them.
 */
const READONLY_RULES = [
  "reset",
  "on",
  "~*",
  "&*",
  "+@read",
  "-@dangerous",
  "-scan",
  "-keys",
  "+ping",
  "+echo",
  "+time",
  "+eval_ro",
  "+evalsha_ro",
  "+fcall_ro",
  "+fcall",
  "+subscribe",
  "+psubscribe",
];
const ACL_POOL_IDLE_MS = 5 * 60_000;

/**
 * One KV database at run time: its backend pools (full access, the `default_ro` ACL user, and
 * one per ACL user that a RESTTOKEN token names), its command table, limits and counters.
 */
export class KvDatabase {
  readonly aliases = new ScriptAliases();
  private readonly admin: RedisBackend;
  private readonly readonlyPool: RedisBackend;
  private readonly aclPools = new Map<string, { pool: RedisBackend; usedAt: number }>();
  /** A single Redis or a Redis Cluster, detected on first use (docs/scaling.md, Redis Cluster). */
  private readonly backends: BackendFactory;
  private table: Promise<CommandTable> | undefined;
  private readonly roPassword: string;
  private loaded: CommandTable | undefined;
  private day = "";
  private dayCount = 0;
  /** Ends scripts past the time limit (SCRIPT/FUNCTION KILL, or SHUTDOWN NOSAVE). */
  private readonly killer: ScriptKiller;

  constructor(
    readonly record: DatabaseRecord,
    readonly endpoint: RedisEndpoint,
    private readonly config: Config,
    private readonly logger: Logger,
    readonly managed?: ManagedRedis,
  ) {
    this.killer = new ScriptKiller(this, config, logger);
    const poolOpts = this.poolOptions(config.kvPoolSize);
    this.backends = new BackendFactory(endpoint, {
      connectTimeoutMs: config.redisConnectTimeoutMs,
      failoverWindowMs: config.kvClusterFailoverWindowMs,
      seeds: seedsOf(record.redisUrl),
    });
    this.admin = this.backends.open(endpoint, poolOpts);
    const roPassword = readonlyUserPassword(endpoint.password ?? JSON.stringify(endpoint));
    this.roPassword = roPassword;
    this.readonlyPool = this.backends.open(
      { ...endpoint, username: READONLY_USER, password: roPassword },
      { ...poolOpts, onLoginRefused: () => this.ensureReadonlyUser(roPassword) },
    );
  }

  get name(): string {
    return this.record.name;
  }

  get maxRequestBytes(): number {
    return this.record.maxRequestBytes ?? this.config.kvMaxRequestBytes;
  }

  get maxReplyBytes(): number {
    return this.config.kvMaxReplyBytes;
  }

  get maxCommandsPerRequest(): number {
    return this.config.kvMaxCommandsPerRequest;
  }

  get scriptTimeLimitMs(): number {
    return this.record.scriptTimeLimitMs ?? this.config.kvScriptTimeLimitMs;
  }

  get allowMigrate(): boolean {
    return this.record.allowMigrate === true;
  }

  /** False when the operator turned the hash-field expiration emulation off. */
  get emulatesFieldTtl(): boolean {
    return this.config.kvEmulateFieldTtl;
  }

  /** The pool a principal's commands run on; Redis's ACLs enforce what each may do. */
  poolFor(principal: Principal): RedisBackend {
    if (principal.role === "standard") return this.admin;
    if (principal.role === "readonly") return this.readonlyPool;
    return this.aclPool(principal.acl as AclCredentials);
  }

  /** The command table once loaded, so requests need not wait on `commandTable()` each time. */
  get loadedTable(): CommandTable | undefined {
    return this.loaded;
  }

  /** The backend's COMMAND table, loaded once (and again after a failure). */
  commandTable(): Promise<CommandTable> {
    this.table ??= this.admin.exec(["COMMAND"]).then(async (reply) => {
      if (reply.kind === "error")
        throw new AppError("backend_unavailable", `ERR COMMAND failed: ${reply.value}`);
      // Once per process: a user made by an older stashd gets today's rules.
      await this.ensureReadonlyUser(this.roPassword);
      if (!this.isManaged && this.stopsUnkillableScripts) {
        void this.warnIfStopLosesWrites().catch(() => undefined); // a warning only: never fails
      }
      this.loaded = parseCommandTable(reply);
      return this.loaded;
    });
    this.table.catch(() => (this.table = undefined));
    return this.table;
  }

  /**
   * Counts commands against the daily limit (per UTC day and per process; see docs/limits).
   * Throws `ERR max daily request limit exceeded` once the limit is reached.
   */
  countCommands(n: number, now = new Date()): void {
    const limit = this.record.dailyRequestLimit ?? this.config.kvDailyRequestLimit;
    if (limit <= 0) return;
    const day = now.toISOString().slice(0, 10);
    if (day !== this.day) {
      this.day = day;
      this.dayCount = 0;
    }
    if (this.dayCount + n > limit) {
      throw new AppError("daily_limit", "ERR max daily request limit exceeded");
    }
    this.dayCount += n;
  }

  /**
   * An external Redis this database may stop (SHUTDOWN NOSAVE, script-killer.ts) should have AOF
   * on: without it, NOSAVE loses every write since its last RDB snapshot. Warns, once.
   */
  private async warnIfStopLosesWrites(): Promise<void> {
    const reply = await this.admin.exec(["INFO", "persistence"]);
    const info = reply.kind === "bulk" ? reply.value.toString() : "";
    if (!/^aof_enabled:0\r?$/m.test(info)) return;
    this.logger.warn(
      "this database may stop its Redis for a script that cannot be killed (stopUnkillableScripts), but that Redis has AOF off: SHUTDOWN NOSAVE would lose every write since its last RDB snapshot",
      { db: this.name },
    );
  }

  /** Creates (or refreshes) the read-only ACL user; Redis then enforces read-only access. */
  async ensureReadonlyUser(password: string): Promise<void> {
    const reply = await this.admin.exec([
      "ACL",
      "SETUSER",
      READONLY_USER,
      ...READONLY_RULES,
      `>${password}`,
    ]);
    if (reply.kind === "error") {
      this.logger.warn("cannot create the read-only ACL user; read-only tokens will fail", {
        db: this.name,
        err: reply.value,
      });
    }
  }

  /** Whether a script that cannot be killed may end with SHUTDOWN NOSAVE (registry.ts). */
  get stopsUnkillableScripts(): boolean {
    return this.record.stopUnkillableScripts ?? this.isManaged;
  }

  get isManaged(): boolean {
    return this.managed !== undefined;
  }

  /**
   * Kills started of scripts past the time limit (ScriptKiller.attempts); lets replies say why
   * a script was killed.
   */
  get scriptKills(): number {
    return this.killer.attempts;
  }

  /** The backend's masters (a single Redis is one), where scripts run. */
  masterEndpoints(): Promise<RedisEndpoint[]> {
    return this.backends.masterEndpoints();
  }

  /** A request's error, explained when the Redis was stopped for a script (script-killer.ts). */
  explainFailure(err: unknown): unknown {
    return this.killer.explain(err);
  }

  private poolOptions(size: number): PoolOptions {
    const connection: ConnectionOptions = {
      replyTimeoutMs: this.config.kvCommandTimeoutMs,
      stall: { afterMs: () => this.scriptTimeLimitMs, onStall: () => this.killer.killSlowScript() },
    };
    return {
      size,
      connectTimeoutMs: this.config.redisConnectTimeoutMs,
      retryBackoffMs: this.config.redisRetryBackoffMs,
      connection,
    };
  }

  async close(): Promise<void> {
    this.killer.close();
    await Promise.all([
      this.admin.close(),
      this.readonlyPool.close(),
      ...[...this.aclPools.values()].map((p) => p.pool.close()),
    ]);
    await this.managed?.stop();
  }

  private aclPool(creds: AclCredentials): RedisBackend {
    const key = JSON.stringify([creds.username, creds.password]);
    const now = Date.now();
    let entry = this.aclPools.get(key);
    if (!entry) {
      this.dropIdleAclPools(now);
      const pool = this.backends.open(
        { ...this.endpoint, username: creds.username, password: creds.password },
        this.poolOptions(1),
      );
      entry = { pool, usedAt: now };
      this.aclPools.set(key, entry);
    }
    entry.usedAt = now;
    return entry.pool;
  }

  private dropIdleAclPools(now: number): void {
    for (const [key, entry] of this.aclPools) {
      if (now - entry.usedAt > ACL_POOL_IDLE_MS) {
        void entry.pool.close();
        this.aclPools.delete(key);
      }
    }
  }
}
