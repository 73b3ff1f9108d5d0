import type { Config } from "../../config/schema.js";
import { AppError, isAppError, messageOf } from "../../shared/errors.js";
import type { Logger } from "../../shared/log.js";
import { metrics } from "../../shared/metrics.js";
import { RedisConnection, type RedisEndpoint } from "../../shared/redis/connection.js";

/** What the killer reads of its database, at each use (the registry may change it). */
export interface ScriptDatabase {
  readonly name: string;
  readonly scriptTimeLimitMs: number;
  /** Whether a script that cannot be killed may end with SHUTDOWN NOSAVE (registry.ts). */
  readonly stopsUnkillableScripts: boolean;
  /** True when stashd runs the redis-server (and so restarts it after a shutdown). */
  readonly isManaged: boolean;
  /** Where scripts may run: the masters of a cluster, or the one server. */
  masterEndpoints(): Promise<RedisEndpoint[]>;
  /** The managed server's pid now (undefined: external, or not running). */
  serverPid(): number | undefined;
  /**
   * SIGKILLs a managed server, which is then restarted from its AOF (ManagedRedis); only while
   * `pid` still runs, so a second worker's kill of the same script spares the restarted server.
   */
  forceRestart(pid: number | undefined): void;
}

/**
 * Why a kill was started: `time`, the script ran past the time limit; `memory`, it grew its
 * managed Redis past the database's max data size (script-memory.ts).
 */
export type KillReason = "time" | "memory";

/** `no-answer`: the kill was not even read within the grace (the script is inside a C call). */
type KillOutcome = "killed" | "unkillable" | "not-busy" | "no-answer";

/** How long after a SHUTDOWN the server is polled for, and backend errors explained. */
const BACK_WAIT_MS = 60_000;
const BACK_POLL_MS = 50;
/** How long a kill for memory may wait for Redis to read it before the server is SIGKILLed. */
const MEMORY_ANSWER_WAIT_MS = 100;

/**
 * Ends scripts that run past the database's time limit (docs/reliability.md, issue 11). Called
 * when a script call has waited the limit: sends SCRIPT KILL (then FUNCTION KILL) on a private
 * connection, since every pooled one may be waiting behind the script.
 *
 * A script that already wrote cannot be killed (Redis answers UNKILLABLE: killing it would leave
 * it half applied). If it still runs after STASHD_KV_UNKILLABLE_SCRIPT_GRACE_MS and the database
 * allows it, its Redis is stopped with SHUTDOWN NOSAVE, which Redis accepts during a busy script.
 * Redis >= 7 propagates a script's effects to the AOF only when the script returns, so the
 * stopped server's AOF holds none of them, and SHUTDOWN writes and fsyncs what it does hold
 * (every write acknowledged before). A managed server is then restarted by ManagedRedis; from
 * the SHUTDOWN until the server answers again, backend errors are explained (`explain`).
 */
export class ScriptKiller {
  /**
   * Kill attempts started. Replies say why a script was killed when one started after their
   * request did: counted when the SCRIPT KILL is sent, not when its OK comes back, since the
   * killed script's error reply (on another connection) may arrive first.
   */
  attempts = 0;
  /** Why the last attempt was started: replies and errors say so. */
  reason: KillReason = "time";
  private memoryDetail = "";
  /** The last forced restart was for memory held between calls, not for a running script. */
  private heldBetweenCalls = false;
  private readonly connections = new Map<string, Promise<RedisConnection>>();
  private running = false;
  /** When the last attempt started (Date.now), for the `busy` trigger's spacing. */
  private lastAttemptAt = 0;
  /**
   * `grace`: an unkillable script runs and its Redis will be stopped if it still runs after the
   * grace; `stopped`: from the SHUTDOWN until the server answers again.
   */
  private phase: "grace" | "stopped" | "forced" | undefined;
  private closed = false;

  constructor(
    private readonly db: ScriptDatabase,
    private readonly config: Config,
    private readonly logger: Logger,
  ) {}

  /**
   * Kills the running script or function; one attempt at a time, the rest are dropped. `stall`:
   * a request has waited the time limit (again); `busy`: Redis answered a command BUSY, which
   * starts an attempt at most once per time limit, since traffic to a busy database answers
   * BUSY at the rate it arrives. Both repeat while the script runs, so an attempt that failed
   * (Redis stalled past the reply deadline, or read the kill before the script) is retried.
   * `memory`: the script grew its Redis past the bound (script-memory.ts); a script that wrote is
   * then stopped without the grace, since every moment of it costs more memory.
   */
  killSlowScript(cause: "stall" | "busy" | "memory" = "stall"): void {
    if (this.running || this.closed) return;
    const now = Date.now();
    if (cause === "busy" && now - this.lastAttemptAt < this.db.scriptTimeLimitMs) return;
    this.lastAttemptAt = now;
    this.running = true;
    this.attempts++;
    this.reason = cause === "memory" ? "memory" : "time";
    this.heldBetweenCalls = false;
    void this.killEverywhere()
      .catch((err: unknown) =>
        this.logger.warn("could not kill a slow script", { db: this.db.name, err: messageOf(err) }),
      )
      .finally(() => (this.running = false));
  }

  /**
   * A failure to reach Redis (connection lost, no reply, connect or login refused) while an
   * unkillable script is about to be ended (the command deadline may come first) or its Redis is
   * stopped, replaced by an error that says so (503); any other error as it is.
   */
  explain(err: unknown): unknown {
    if (!this.phase || !isBackendFailure(err)) return err;
    const cause = this.causeText();
    if (this.phase === "grace") {
      return new AppError(
        "backend_unavailable",
        `ERR database busy: a script that had written runs past ${cause} and cannot be killed; its Redis is stopped without saving (SHUTDOWN NOSAVE) if it still runs ${this.config.kvUnkillableScriptGraceMs} ms later. Retry in a moment.`,
        { cause: err },
      );
    }
    if (this.phase === "forced") {
      const why = this.heldBetweenCalls
        ? `left its Redis holding memory past ${cause}`
        : this.reason === "memory"
          ? `grew its Redis past ${cause} while Redis read no other command`
          : `ran past ${cause} inside one long call that Redis cannot interrupt`;
      return new AppError(
        "backend_unavailable",
        `ERR database restarting: a script ${why}, so stashd killed its redis-server and is restarting it from its AOF; none of the script's writes were kept. Retry in a moment.`,
        { cause: err },
      );
    }
    const back = this.db.isManaged
      ? "stashd is restarting it"
      : "it answers again once its supervisor restarts it";
    return new AppError(
      "backend_unavailable",
      `ERR database restarting: a script that had written ran past ${cause} and could not be killed, so its Redis was stopped without saving (SHUTDOWN NOSAVE); none of the script's writes were kept and ${back}. Retry in a moment.`,
      { cause: err },
    );
  }

  /**
   * Starts a kill for a script that grew its Redis past the memory bound (script-memory.ts);
   * `detail` says by how much, for replies and logs.
   */
  killForMemory(detail: string): void {
    if (this.running) return;
    this.memoryDetail = detail;
    this.killSlowScript("memory");
  }

  /**
   * SIGKILLs the managed server and restarts it from its AOF: it holds past the memory ceiling
   * between script calls (script-memory.ts), memory no kill frees (a function library's Lua
   * tables; the restart reloads the library, not its tables). Every acknowledged write is kept.
   */
  restartForMemory(detail: string): void {
    // One restart at a time: calls sent until the server answers again find nothing to read.
    if (this.running || this.closed || this.phase || !this.db.isManaged) return;
    this.memoryDetail = detail;
    this.reason = "memory";
    this.heldBetweenCalls = true;
    this.forceRestart(this.db.serverPid());
  }

  /** What the script ran past, for replies: the time limit or the memory bound. */
  causeText(): string {
    return this.reason === "memory"
      ? `the database's memory bound (${this.memoryDetail})`
      : `the script time limit of ${this.db.scriptTimeLimitMs} ms`;
  }

  close(): void {
    this.closed = true;
    for (const conn of this.connections.values()) {
      void conn.then(
        (c) => c.destroy(),
        () => undefined,
      );
    }
    this.connections.clear();
  }

  private async killEverywhere(): Promise<void> {
    // On a Redis Cluster the script may run on any master: each one gets the kill.
    const nodes = await this.db.masterEndpoints();
    await Promise.all(nodes.map((node) => this.killOn(node)));
  }

  private async killOn(endpoint: RedisEndpoint): Promise<void> {
    // The server seen running the script, read before the wait: it may be restarted meanwhile.
    const pid = this.db.serverPid();
    const outcome = await this.withinGrace(this.tryKill(endpoint));
    if (outcome === "no-answer") return this.forceRestart(pid);
    if (outcome !== "unkillable") return;
    const graceMs = this.config.kvUnkillableScriptGraceMs;
    const fields = { db: this.db.name, past: this.causeText() };
    if (graceMs === 0 || !this.db.stopsUnkillableScripts) {
      this.logger.error(
        "a script that already wrote runs past its bound and cannot be killed; the database answers BUSY until it ends",
        { ...fields, stop: graceMs === 0 ? "off (grace 0)" : "not allowed for this database" },
      );
      return;
    }
    // Past the memory bound every moment costs more memory: stopped at once, without the grace.
    if (this.reason === "memory") return this.shutdown(endpoint);
    this.logger.error(
      "a script that already wrote runs past the time limit and cannot be killed; its Redis is stopped (SHUTDOWN NOSAVE) if it still runs after the grace",
      { ...fields, graceMs },
    );
    this.phase = "grace";
    try {
      await new Promise((r) => setTimeout(r, graceMs));
      if (this.closed || (await this.tryKill(endpoint)) !== "unkillable") return;
    } finally {
      this.phase = undefined;
    }
    await this.shutdown(endpoint);
  }

  /**
   * The kill's outcome, or `no-answer` when Redis has not read it within the grace: a script
   * inside one C call (string.find with a backtracking pattern, string.rep of gigabytes) never
   * reaches the hook where Redis reads commands, so neither SCRIPT KILL nor SHUTDOWN lands.
   * Past the memory bound the wait is MEMORY_ANSWER_WAIT_MS: Redis reads no other client's
   * command in a script's first `busy-reply-threshold` (the time limit), and the script grows all
   * that time. A SIGKILL keeps every acknowledged write: Redis write()s its AOF buffer to the file
   * before it answers, and the script's own writes reach the buffer only when it returns.
   */
  private async withinGrace(kill: Promise<KillOutcome>): Promise<KillOutcome> {
    const graceMs = this.config.kvUnkillableScriptGraceMs;
    if (graceMs === 0 || !this.db.isManaged || !this.db.stopsUnkillableScripts) return kill;
    const waitMs = this.reason === "memory" ? Math.min(graceMs, MEMORY_ANSWER_WAIT_MS) : graceMs;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<KillOutcome>((resolve) => {
      timer = setTimeout(() => resolve("no-answer"), waitMs);
    });
    kill.catch(() => undefined);
    return Promise.race([kill, late]).finally(() => clearTimeout(timer));
  }

  /** SIGKILL of a managed server whose script could not be reached; explained as a restart. */
  private forceRestart(pid: number | undefined): void {
    this.phase = "forced";
    metrics.kvScriptShutdown(this.db.name, this.reason);
    this.logger.error(
      this.heldBetweenCalls
        ? "the database's redis-server holds memory past its ceiling between script calls (a function library's tables, which no kill frees); killing it (SIGKILL) and restarting it from its AOF"
        : "the database's redis-server does not read commands: a script is inside one long C call, or in its first busy-reply-threshold, where SCRIPT KILL and SHUTDOWN cannot reach it; killing it (SIGKILL) and restarting it from its AOF",
      { db: this.db.name, past: this.causeText() },
    );
    this.db.forceRestart(pid);
    void this.db.masterEndpoints().then((nodes) => this.awaitBack(nodes[0] as RedisEndpoint));
  }

  /** SCRIPT KILL for EVAL scripts; a busy function answers it BUSY and takes FUNCTION KILL. */
  private async tryKill(endpoint: RedisEndpoint): Promise<KillOutcome> {
    const conn = await this.connection(endpoint);
    let reply = await conn.send(["SCRIPT", "KILL"]);
    if (reply.kind === "error" && !reply.value.startsWith("UNKILLABLE")) {
      reply = await conn.send(["FUNCTION", "KILL"]);
    }
    if (reply.kind !== "error") {
      metrics.kvScriptKilled(this.db.name, this.reason);
      this.logger.warn("killed a script that ran past its bound", {
        db: this.db.name,
        past: this.causeText(),
      });
      return "killed";
    }
    return reply.value.startsWith("UNKILLABLE") ? "unkillable" : "not-busy";
  }

  private async shutdown(endpoint: RedisEndpoint): Promise<void> {
    this.phase = "stopped";
    metrics.kvScriptShutdown(this.db.name, this.reason);
    this.logger.error(
      "stopping the database's Redis with SHUTDOWN NOSAVE: a script that wrote still runs past its bound; its writes are dropped",
      {
        db: this.db.name,
        past: this.causeText(),
        graceMs: this.reason === "memory" ? 0 : this.config.kvUnkillableScriptGraceMs,
        then: this.db.isManaged
          ? "restarted from its AOF"
          : "external: its supervisor must restart it",
      },
    );
    const conn = await this.connection(endpoint);
    // NOW: no wait for replicas (they never got the script's effects either). On success the
    // server exits and the connection closes without a reply.
    const reply = await conn.send(["SHUTDOWN", "NOSAVE", "NOW"]).catch(() => undefined);
    if (reply?.kind === "error") {
      this.phase = undefined;
      this.logger.error("Redis refused SHUTDOWN NOSAVE", { db: this.db.name, err: reply.value });
      return;
    }
    conn.destroy();
    void this.awaitBack(endpoint);
  }

  /** Polls the stopped server until it answers PING (or BACK_WAIT_MS), then ends the phase. */
  private async awaitBack(endpoint: RedisEndpoint): Promise<void> {
    const since = Date.now();
    while (!this.closed && Date.now() - since < BACK_WAIT_MS) {
      if (await this.answers(endpoint)) {
        this.logger.info("the database's Redis answers again after the shutdown", {
          db: this.db.name,
          afterMs: Date.now() - since,
        });
        // The pools fail fast this long after the failed connects of the restart.
        await new Promise((r) => setTimeout(r, this.config.redisRetryBackoffMs));
        break;
      }
      await new Promise((r) => setTimeout(r, BACK_POLL_MS));
    }
    this.phase = undefined;
  }

  private async answers(endpoint: RedisEndpoint): Promise<boolean> {
    try {
      const conn = await RedisConnection.open(endpoint, this.config.redisConnectTimeoutMs);
      const reply = await conn.send(["PING"]).finally(() => conn.destroy());
      return reply.kind !== "error";
    } catch {
      return false;
    }
  }

  /** The private connection to one node, opened once and again after it died. */
  private async connection(endpoint: RedisEndpoint): Promise<RedisConnection> {
    const key = JSON.stringify([endpoint.host, endpoint.port, endpoint.path]);
    let pending = this.connections.get(key);
    if (!pending) {
      pending = RedisConnection.open(endpoint, this.config.redisConnectTimeoutMs, {
        replyTimeoutMs: this.config.kvCommandTimeoutMs,
      });
      this.connections.set(key, pending);
      pending.catch(() => this.connections.delete(key));
    }
    const conn = await pending;
    if (conn.alive) return conn;
    if (this.connections.get(key) === pending) this.connections.delete(key);
    return this.connection(endpoint);
  }
}

/** The connection and pool errors of a Redis that is down or not answering (connection.ts). */
function isBackendFailure(err: unknown): boolean {
  return (
    isAppError(err) && err.code === "backend_unavailable" && err.message.startsWith("ERR Redis ")
  );
}
