import type { Config } from "../../config/schema.js";
import { vectorSettingsOf, type VectorSettings } from "../vector/settings.js";
import { AppError } from "../../shared/errors.js";
import type { Logger } from "../../shared/log.js";
import type { ConnectionOptions, RedisEndpoint } from "../../shared/redis/connection.js";
import type { ManagedRedis } from "../../shared/redis/managed.js";
import type { RedisBackend } from "../../shared/redis/backend.js";
import { BackendFactory, seedsOf } from "../../shared/redis/cluster/factory.js";
import type { PoolOptions } from "../../shared/redis/pool.js";
import { parseCommandTable, type CommandTable } from "../commands/policy.js";
import {
  QUEUE_KEY_PREFIX,
  READONLY_USER,
  STANDARD_USER,
  ceilingRules,
  keyRules,
  standardUserRules,
  type RightsLayout,
} from "../commands/command-rights.js";
import type { DatabaseRecord } from "./registry.js";
import { ScriptAliases } from "../commands/rewrite.js";
import { ScriptKiller, type KillReason } from "./script-killer.js";
import { ScriptMemoryWatch } from "./script-memory.js";
import { managedMaxMemory, type ManagedLimits } from "./managed-limits.js";
import { closeSearch } from "../search/commands.js";
import { ExclusiveLimits } from "./exclusive-limits.js";
import { FailureThrottle } from "../../shared/failure-throttle.js";
import { readonlyUserPassword, standardUserPassword, type AclCredentials } from "./tokens.js";

/**
 * Who a request runs as: the database, and which backend user its token maps to. Built once per
 * token (database-manager.ts) and shared by every request that presents it.
 */
export interface Principal {
  readonly db: KvDatabase;
  readonly role: "standard" | "readonly" | "acl";
  readonly acl?: AclCredentials;
}

/**
 * Reads only; SCAN and KEYS are refused as Upstash's "powerful read commands"
 * (docs/redis-rest-protocol.md). TIME lets the emulated hash reads (emulate/lua/) tell which
 * fields are past their deadline. FCALL runs FCALL_RO of functions not declared no-writes
 * (emulate/fcall-ro.ts): the ACL still refuses every write command inside them.
 */
const READONLY_RULES = [
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
/** stashd's own connections (COMMAND, ACL SETUSER, INFO): few and seldom used. */
const ADMIN_POOL_SIZE = 1;
const ACL_POOL_IDLE_MS = 5 * 60_000;

/** The pool's error for a connection that Redis closed (connection.ts). */
function closedByRedis(err: unknown): boolean {
  return err instanceof AppError && err.message === "ERR Redis is unreachable: connection closed";
}

/** Who else uses this database's Redis (database-manager.ts decides, from the URLs). */
export interface RedisSharing {
  /** The queue's keys live on the same Redis (in another database number). */
  readonly withQueue: boolean;
  /** The user the queue logs in as there, reserved like stashd's own. */
  readonly queueUser: string | undefined;
}

/**
 * One KV database at run time: its backend pools (full access, the `default_ro` ACL user, and
 * one per ACL user that a RESTTOKEN token names), its command table, limits and counters.
 */
export class KvDatabase {
  readonly aliases = new ScriptAliases();
  /** stashd's own connections, as the endpoint's user: never a token's commands. */
  private readonly admin: RedisBackend;
  private readonly standardPool: RedisBackend;
  private readonly readonlyPool: RedisBackend;
  private readonly stdPassword: string;
  /** Rules appended to every token-made ACL user's (command-rights.ts), once the table is in. */
  private ceiling: string[] | undefined;
  private readonly aclPools = new Map<string, { pool: RedisBackend; usedAt: number }>();
  /** A single Redis or a Redis Cluster, detected on first use (docs/scaling.md, Redis Cluster). */
  private readonly backends: BackendFactory;
  private table: Promise<CommandTable> | undefined;
  private readonly roPassword: string;
  private loaded: CommandTable | undefined;
  private day = "";
  private dayCount = 0;
  /** Commands accepted so far (a pipeline counts each), for the console's charts (chart-counts.ts). */
  commandsRun = 0;
  /** Ends scripts past the time limit (SCRIPT/FUNCTION KILL, or SHUTDOWN NOSAVE). */
  private readonly killer: ScriptKiller;
  /** Ends scripts that grow a managed Redis past its max data size (script-memory.ts). */
  private readonly memoryWatch: ScriptMemoryWatch | undefined;
  /** Bounds on exclusive connections and event streams, all tokens together (exclusive-limits.ts). */
  readonly limits: ExclusiveLimits;
  /** Failed ACL RESTTOKEN logins, per ACL user (gateway-commands.ts): no password guessing. */
  readonly restTokenGuesses: FailureThrottle;

  constructor(
    readonly record: DatabaseRecord,
    readonly endpoint: RedisEndpoint,
    readonly config: Config,
    readonly logger: Logger,
    readonly managed?: ManagedRedis,
    private readonly sharing: RedisSharing = { withQueue: false, queueUser: undefined },
  ) {
    this.killer = new ScriptKiller(this, config, logger);
    this.memoryWatch = managed && this.watchMemory(managed);
    this.limits = new ExclusiveLimits(record.name, config);
    this.restTokenGuesses = new FailureThrottle({
      perKey: config.kvRestTokenFailures,
      global: 10 * config.kvRestTokenFailures,
      windowMs: config.kvRestTokenWindowMs,
      what: "ACL RESTTOKEN",
      errorPrefix: "ERR ",
    });
    const poolOpts = this.poolOptions(config.kvPoolSize);
    this.backends = new BackendFactory(endpoint, {
      connectTimeoutMs: config.redisConnectTimeoutMs,
      failoverWindowMs: config.kvClusterFailoverWindowMs,
      seeds: seedsOf(record.redisUrl),
    });
    this.admin = this.backends.open(endpoint, this.poolOptions(ADMIN_POOL_SIZE));
    const secret = endpoint.password ?? JSON.stringify(endpoint);
    this.roPassword = readonlyUserPassword(secret);
    this.stdPassword = standardUserPassword(secret);
    // A user removed behind stashd's back (or not made yet) is made again before a new login.
    const remake = { onLoginRefused: () => this.remakeUsers() };
    this.standardPool = this.backends.open(
      { ...endpoint, username: STANDARD_USER, password: this.stdPassword },
      { ...poolOpts, ...remake },
    );
    this.readonlyPool = this.backends.open(
      { ...endpoint, username: READONLY_USER, password: this.roPassword },
      { ...poolOpts, ...remake },
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

  get maxRecordBytes(): number {
    return this.config.kvMaxRecordBytes;
  }

  /** Most elements one set algebra command may pass over (combined-size.ts); 0: no limit. */
  get maxCombinedElements(): number {
    return this.config.kvMaxCombinedElements;
  }

  get maxCommandsPerRequest(): number {
    return this.config.kvMaxCommandsPerRequest;
  }

  get maxCommandArgs(): number {
    return this.config.kvMaxCommandArgs;
  }

  /** What a request's blocking commands may wait together (STASHD_KV_MAX_BLOCK_MS), at least 1 ms. */
  get maxBlockMs(): number {
    return Math.max(1, this.config.kvMaxBlockMs);
  }

  /** How long a backend connection owing replies may receive nothing (STASHD_KV_COMMAND_TIMEOUT_MS). */
  get commandTimeoutMs(): number {
    return this.config.kvCommandTimeoutMs;
  }

  get scriptTimeLimitMs(): number {
    return this.record.scriptTimeLimitMs ?? this.config.kvScriptTimeLimitMs;
  }

  get allowMigrate(): boolean {
    return this.record.allowMigrate === true;
  }

  /** Whether the read-only token may run Lua (STASHD_KV_READONLY_SCRIPTS). */
  get readonlyScripts(): boolean {
    return this.config.kvReadonlyScripts;
  }

  /** The VECTOR.* limits (STASHD_KV_VECTOR_*, src/kv/vector/settings.ts). */
  get vectorSettings(): VectorSettings {
    return vectorSettingsOf(this.config);
  }

  /** False when the operator turned the hash-field expiration emulation off. */
  get emulatesFieldTtl(): boolean {
    return this.config.kvEmulateFieldTtl;
  }

  /** The pool a principal's commands run on; Redis's ACLs enforce what each may do. */
  poolFor(principal: Principal): RedisBackend {
    if (principal.role === "standard") return this.standardPool;
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
      const table = parseCommandTable(reply);
      // Once per process: users made by an older stashd get today's rules.
      await this.applyRights(table);
      if (!this.isManaged && this.stopsUnkillableScripts) {
        void this.warnIfStopLosesWrites().catch(() => undefined); // a warning only: never fails
      }
      this.loaded = table;
      return this.loaded;
    });
    this.table.catch(() => (this.table = undefined));
    return this.table;
  }

  /**
   * Counts commands against the daily limit (per UTC day and per process; see docs/limits).
   * Throws `ERR max daily request limit exceeded` once the limit is reached.
   */
  countCommands(n: number): void {
    const limit = this.record.dailyRequestLimit ?? this.config.kvDailyRequestLimit;
    if (limit <= 0) return;
    const day = new Date().toISOString().slice(0, 10);
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

  /**
   * Makes (or refreshes) the tokens' ACL users from the command table, so that Redis enforces
   * the gateway's policy in scripts too (command-rights.ts). Throws when Redis refuses: a
   * standard token must never run with more rights than the policy gives.
   */
  async applyRights(table: CommandTable): Promise<void> {
    const layout = await this.rightsLayout();
    const rules: [string, string[], string][] = [
      [STANDARD_USER, standardUserRules(table, layout), this.stdPassword],
      [READONLY_USER, this.readonlyRules(layout), this.roPassword],
    ];
    for (const [user, userRules, password] of rules) {
      const reply = await this.admin.exec(["ACL", "SETUSER", user, ...userRules, `>${password}`]);
      if (reply.kind === "error") {
        throw new AppError(
          "backend_unavailable",
          `ERR cannot set up the ACL user ${user} on database ${this.name}'s Redis (${reply.value}); stashd needs Redis >= 7 with ACL SETUSER allowed for the URL's user`,
        );
      }
    }
    this.ceiling = ceilingRules(table, layout);
    if (this.isManaged) await this.capTokenUsers(this.ceiling);
    this.logger.debug("ACL users set up", { db: this.name, denied: this.ceiling.join(" ") });
  }

  /**
   * Every ACL user of a managed Redis was made through a token: users made before today's rules
   * (or by an older stashd, without the ceiling) get the ceiling now.
   */
  private async capTokenUsers(ceiling: readonly string[]): Promise<void> {
    const users = await this.admin.exec(["ACL", "USERS"]);
    if (users.kind !== "array") return;
    for (const user of users.value) {
      const name = user.kind === "bulk" ? user.value.toString() : "";
      if (name === "" || this.isReservedUser(name)) continue;
      await this.admin.exec(["ACL", "SETUSER", name, ...ceiling]);
    }
  }

  /** The rules no token-made ACL user may exceed; undefined before the command table is in. */
  get aclCeiling(): readonly string[] | undefined {
    return this.ceiling;
  }

  private readonlyRules(layout: RightsLayout): string[] {
    const select = layout.dbNumber === 0 ? [] : [`+select|${layout.dbNumber}`];
    return [
      "reset",
      "on",
      ...keyRules(layout.reservedPrefixes),
      "&*",
      ...READONLY_RULES,
      ...select,
    ];
  }

  /**
   * Applies a changed `--max-data-size`, `--eviction` or `--max-request-size` to a running
   * managed Redis (its config file gets them at the next start): `maxmemory`, `maxmemory-policy`,
   * and `proto-max-bulk-len`, which must
   * grow with the request size cap before a longer argument arrives.
   */
  async applyManagedLimits(limits: ManagedLimits): Promise<void> {
    if (!this.managed) return;
    const reply = await this.admin.exec([
      "CONFIG",
      "SET",
      "maxmemory",
      String(limits.maxMemoryBytes),
      "maxmemory-policy",
      limits.evictionPolicy,
      "proto-max-bulk-len",
      String(limits.maxBulkBytes),
      // Redis reads SCRIPT KILL only past this (busy-reply-threshold): the script time limit.
      "lua-time-limit",
      String(limits.luaTimeLimitMs),
    ]);
    if (reply.kind === "error") {
      this.logger.warn("cannot apply the database's new limits", { error: reply.value });
    }
  }

  /** Sets the users' rules again (after a change of allowMigrate, or a refused login). */
  async remakeUsers(): Promise<void> {
    await this.applyRights(await this.commandTable());
  }

  /** What of this database's Redis the ACL rules depend on (command-rights.ts). */
  private async rightsLayout(): Promise<RightsLayout> {
    return {
      dbNumber: this.endpoint.db ?? 0,
      allowMigrate: this.allowMigrate,
      sanitizesPayloads: this.isManaged || (await this.checksDumpPayloads()),
      reservedPrefixes: this.sharing.withQueue ? [QUEUE_KEY_PREFIX] : [],
    };
  }

  /** An external Redis checks RESTORE payloads only with `sanitize-dump-payload yes`. */
  private async checksDumpPayloads(): Promise<boolean> {
    const reply = await this.admin.exec(["CONFIG", "GET", "sanitize-dump-payload"]);
    const value = reply.kind === "array" ? reply.value[1] : undefined;
    const sanitizes = value?.kind === "bulk" && value.value.toString() === "yes";
    if (!sanitizes) {
      this.logger.warn(
        "RESTORE is refused on this database: its Redis does not check dump payloads (set sanitize-dump-payload yes), and a crafted payload can crash it",
        { db: this.name },
      );
    }
    return sanitizes;
  }

  /** ACL users a token may neither change, delete nor mint a token for. */
  isReservedUser(name: string): boolean {
    return (
      name === "default" ||
      name === READONLY_USER ||
      name === STANDARD_USER ||
      name === this.endpoint.username ||
      name === this.sharing.queueUser
    );
  }

  /** Whether this database's Redis also holds the queue (keys under QUEUE_KEY_PREFIX). */
  get sharesRedisWithQueue(): boolean {
    return this.sharing.withQueue;
  }

  /** stashd's own connection to the database, as the Redis URL's user: never a token's. */
  get serverAdmin(): RedisBackend {
    return this.admin;
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

  /** Why the last kill was started, and what it ran past (for replies). */
  get scriptKillReason(): { reason: KillReason; past: string } {
    return { reason: this.killer.reason, past: this.killer.causeText() };
  }

  /**
   * Marks a script call sent to this database; the returned function marks it answered. A
   * managed database's memory is watched meanwhile (script-memory.ts).
   */
  scriptCallStarted(): () => void {
    return this.memoryWatch?.started() ?? noop;
  }

  private watchMemory(managed: ManagedRedis): ScriptMemoryWatch {
    return new ScriptMemoryWatch(
      { pidFile: managed.pidFile, maxDataBytes: () => managedMaxMemory(this.config, this.record) },
      {
        checkMs: this.config.kvScriptMemoryCheckMs,
        maxGrowthBytes: this.config.kvScriptMaxGrowthBytes,
        onOverrun: ({ rssBytes, boundBytes }) =>
          this.killer.killForMemory(
            `its redis-server held ${mib(rssBytes)} MiB, past ${mib(boundBytes)} MiB: the max data size or what it held before the script, plus STASHD_KV_SCRIPT_MAX_GROWTH_BYTES`,
          ),
        onHeld: ({ rssBytes, boundBytes }) =>
          this.killer.restartForMemory(
            `its redis-server held ${mib(rssBytes)} MiB between script calls, past ${mib(boundBytes)} MiB: the max data size plus twice STASHD_KV_SCRIPT_MAX_GROWTH_BYTES`,
          ),
      },
    );
  }

  /** The backend's masters (a single Redis is one), where scripts run. */
  masterEndpoints(): Promise<RedisEndpoint[]> {
    return this.backends.masterEndpoints();
  }

  /** SIGKILLs the managed redis-server, which restarts from its AOF (script-killer.ts). */
  forceRestart(pid: number | undefined): void {
    this.managed?.forceRestart(pid);
  }

  /** The managed redis-server's pid, from its pid file (undefined: external, or not running). */
  serverPid(): number | undefined {
    return this.managed?.currentPid();
  }

  /** A request's error, explained when the Redis was stopped for a script (script-killer.ts). */
  explainFailure(err: unknown): unknown {
    const explained = this.killer.explain(err);
    if (explained !== err || !this.managed?.running || !closedByRedis(err)) return explained;
    // A live managed Redis closes a pooled connection only past its reply buffer limit.
    const limit = this.managed.replyBufferLimitBytes;
    return new AppError(
      "backend_unavailable",
      `ERR reply too large: Redis closed the connection while building a reply past its limit of ${limit ?? "?"} bytes (4 x STASHD_KV_MAX_REPLY_BYTES); ask for less in one request`,
      { cause: err },
    );
  }

  private poolOptions(size: number): PoolOptions {
    const connection: ConnectionOptions = {
      replyTimeoutMs: this.config.kvCommandTimeoutMs,
      stall: {
        afterMs: () => this.scriptTimeLimitMs,
        onStall: (cause) => this.killer.killSlowScript(cause),
      },
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
    this.memoryWatch?.close();
    closeSearch(this);
    await Promise.all([
      this.admin.close(),
      this.standardPool.close(),
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

function noop(): void {}

function mib(bytes: number): string {
  return (bytes / (1024 * 1024)).toFixed(0);
}
