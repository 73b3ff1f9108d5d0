import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { AppError, messageOf } from "../errors.js";
import type { Logger } from "../log.js";
import { metrics } from "../metrics.js";
import { RedisConnection, type RedisEndpoint } from "./connection.js";
import { prepareAclFile } from "./managed-acl-file.js";

export interface ManagedRedisOptions {
  /** Directory that holds this server's config, AOF files, password and log. */
  dir: string;
  bin: string;
  /** `always` for the queue (a 201 means the message is on disk), `everysec` for KV data. */
  appendfsync: "always" | "everysec";
  maxRestartBackoffMs: number;
  /**
   * Redis's `lua-time-limit` (busy-reply-threshold): how long a script runs before Redis answers
   * others BUSY and accepts SCRIPT KILL. The KV gateway sets it to its script time limit.
   */
  luaTimeLimitMs?: number;
  /**
   * Redis's hard `client-output-buffer-limit` for normal clients: a reply Redis builds past it
   * closes that connection instead of growing the server (the KV gateway sets it above its reply
   * cap, so one read of many large values cannot make Redis build gigabytes first).
   */
  replyBufferLimitBytes?: number;
  /**
   * Redis's `maxmemory`, with `maxmemory-policy noeviction`: past it Redis refuses writes that
   * could grow its memory (`OOM …`) while reads and deletes go on, so one database's writers
   * cannot take the machine's memory from the queue and the other databases.
   */
  maxMemoryBytes?: number;
  /** Redis's `maxmemory-policy` with `maxMemoryBytes` (default `noeviction`). */
  evictionPolicy?: "noeviction" | "allkeys-lru";
  /**
   * Redis's `proto-max-bulk-len`: the longest argument Redis reads, and the longest string
   * APPEND, SETRANGE, SETBIT and BITFIELD may grow a key to, from a request or from a script.
   * Must stay at or above the longest argument stashd sends (the request size cap): a longer one
   * is a protocol error that closes the connection.
   */
  maxBulkBytes?: number;
  /**
   * Keep ACL users across restarts in `dir/users.acl` (managed-acl-file.ts): the KV gateway's
   * databases, whose users `ACL SETUSER` made through a token must outlive a restart.
   */
  keepAclUsers?: boolean;
  logger: Logger;
}

/** What a process that runs managed servers for others is told: the options without the logger. */
export type HostedRedisOptions = Omit<ManagedRedisOptions, "logger">;

/**
 * Runs managed redis-servers on behalf of this process (a `stashd start` worker, whose servers
 * belong to its supervisor, src/cli/supervisor.ts). `ensure` starts the server for those options
 * unless it runs already, and answers where it listens; `release` says this process no longer
 * uses it (the host decides whether it stops); `forceRestart` SIGKILLs it (script-killer.ts).
 */
export interface ManagedRedisHost {
  ensure(opts: HostedRedisOptions): Promise<{ endpoint: RedisEndpoint; pid: number | undefined }>;
  release(dir: string): Promise<void>;
  forceRestart(dir: string, pid?: number): void;
}

let elsewhere: ManagedRedisHost | undefined;

/**
 * From now on every ManagedRedis made in this process asks `host` instead of running its own
 * redis-server. Process-wide on purpose: a worker process never owns a managed server.
 */
export function runManagedRedisElsewhere(host: ManagedRedisHost): void {
  elsewhere = host;
}

const READY_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 10_000;

/**
 * A private redis-server child process: unix socket only (no TCP port), random password kept in
 * `dir/password` (mode 0600), AOF on. A crashed child is restarted with exponential back-off;
 * `stop()` sends SIGTERM so Redis flushes its AOF before exiting. A child left behind by a stashd
 * that was SIGKILLed is found through its pid file and stopped before a new one starts.
 */
export class ManagedRedis {
  private child: ChildProcess | undefined;
  private stopping = false;
  private backoffMs = 100;
  private restartTimer: NodeJS.Timeout | undefined;
  private own: RedisEndpoint | undefined;
  /** Set when another process runs this server (runManagedRedisElsewhere). */
  private readonly host = elsewhere;
  private hostedPid: number | undefined;

  private readonly opts: ManagedRedisOptions;

  constructor(options: ManagedRedisOptions) {
    // Absolute: redis-server chdirs into `dir` before opening the log file, so a relative data
    // dir (the default `./.stashd`) would point the log file at a path that does not exist.
    const opts = { ...options, dir: path.resolve(options.dir) };
    this.opts = opts;
  }

  /** Where to reach the server (its socket and password); known once started. */
  get endpoint(): RedisEndpoint {
    if (this.own) return this.own;
    mkdirSync(this.opts.dir, { recursive: true, mode: 0o700 });
    this.own = { path: socketPath(this.opts.dir), password: readOrCreatePassword(this.opts.dir) };
    return this.own;
  }

  async start(): Promise<RedisEndpoint> {
    if (this.host) {
      const wanted: HostedRedisOptions & { logger?: Logger } = { ...this.opts };
      delete wanted.logger; // the host logs with its own
      const hosted = await this.host.ensure(wanted);
      this.own = hosted.endpoint;
      this.hostedPid = hosted.pid;
      return hosted.endpoint;
    }
    const endpoint = this.endpoint;
    await stopStaleServer(this.opts.dir);
    writeFileSync(path.join(this.opts.dir, "redis.conf"), this.configText(), { mode: 0o600 });
    await this.spawnAndWait();
    return endpoint;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.host) return this.host.release(this.opts.dir);
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }

  /** The reply buffer limit it runs with (ManagedRedisOptions.replyBufferLimitBytes). */
  get replyBufferLimitBytes(): number | undefined {
    return this.opts.replyBufferLimitBytes;
  }

  /** Whether the child is up (false while it is being restarted, or after stop). */
  get running(): boolean {
    if (this.host) return !this.stopping && this.own !== undefined;
    const child = this.child;
    return (
      !this.stopping && child !== undefined && child.exitCode === null && child.signalCode === null
    );
  }

  /**
   * Ends the child at once (SIGKILL) and lets the restart path bring it back from its AOF: for a
   * server stuck where no command lands, such as a script inside one long C call (a backtracking
   * pattern, a huge string.rep) where even SHUTDOWN NOSAVE is never read. Writes acknowledged in
   * the last fsync interval (`appendfsync everysec`: about 1 s) may be lost.
   */
  forceRestart(pid?: number): void {
    if (this.host) return this.host.forceRestart(this.opts.dir, pid);
    if (pid !== undefined && this.child?.pid !== pid) return; // already replaced
    if (this.running) this.child?.kill("SIGKILL");
  }

  /** The running server's pid as its pid file says (wherever it is hosted); undefined: none. */
  currentPid(): number | undefined {
    try {
      const pid = Number(readFileSync(this.pidFile, "utf8").trim());
      return Number.isInteger(pid) && pid > 0 ? pid : undefined;
    } catch {
      return undefined;
    }
  }

  /** The server's pid file, rewritten at each (re)start: its current pid, wherever it is hosted. */
  get pidFile(): string {
    return path.join(this.opts.dir, "redis.pid");
  }

  /** Pid of the running child (as of start when hosted elsewhere), for fault-injection tests. */
  get pid(): number | undefined {
    return this.host ? this.hostedPid : this.child?.pid;
  }

  private configText(): string {
    const dir = this.opts.dir;
    const endpoint = this.endpoint;
    return [
      "# Written by stashd at every start; edits are overwritten.",
      "port 0",
      `unixsocket ${endpoint.path ?? ""}`,
      "unixsocketperm 700",
      `dir ${dir}`,
      `pidfile ${path.join(dir, "redis.pid")}`,
      `logfile ${path.join(dir, "redis.log")}`,
      `requirepass ${endpoint.password ?? ""}`,
      ...(this.opts.keepAclUsers
        ? [`aclfile ${prepareAclFile(dir, endpoint.password ?? "")}`]
        : []),
      "appendonly yes",
      `appendfsync ${this.opts.appendfsync}`,
      'save ""',
      "daemonize no",
      "protected-mode yes",
      // RESTORE of a crafted payload could otherwise crash the server at a later read.
      "sanitize-dump-payload yes",
      ...(this.opts.replyBufferLimitBytes !== undefined
        ? [`client-output-buffer-limit normal ${this.opts.replyBufferLimitBytes} 0 0`]
        : []),
      ...(this.opts.luaTimeLimitMs !== undefined
        ? [`lua-time-limit ${this.opts.luaTimeLimitMs}`]
        : []),
      ...(this.opts.maxMemoryBytes !== undefined
        ? [
            `maxmemory ${this.opts.maxMemoryBytes}`,
            `maxmemory-policy ${this.opts.evictionPolicy ?? "noeviction"}`,
          ]
        : []),
      ...(this.opts.maxBulkBytes !== undefined
        ? [`proto-max-bulk-len ${this.opts.maxBulkBytes}`]
        : []),
      "",
    ].join("\n");
  }

  private async spawnAndWait(): Promise<void> {
    const conf = path.join(this.opts.dir, "redis.conf");
    const child = spawn(this.opts.bin, [conf], { stdio: ["ignore", "ignore", "pipe"] });
    this.child = child;
    let stderr = "";
    child.stderr?.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    let onStartupExit: ((code: number | null) => void) | undefined;
    const spawnFailed = new Promise<never>((_, reject) => {
      child.once("error", (err) => reject(missingBinary(this.opts.bin, err)));
      onStartupExit = (code) =>
        reject(
          new AppError(
            "startup_failed",
            `redis-server exited with code ${String(code)} at start: ${lastLog(this.opts.dir, stderr)}`,
          ),
        );
      child.once("exit", onStartupExit);
    });
    spawnFailed.catch(() => undefined);
    let failed = false;
    await Promise.race([
      waitUntilReady(this.endpoint, () => this.stopping || failed),
      spawnFailed.catch((err: unknown) => {
        failed = true; // stops the readiness loop, which would keep the process alive 15 s
        throw err;
      }),
    ]);
    // Only our own listener: stop() may be waiting on "exit" of this child already.
    if (onStartupExit) child.off("exit", onStartupExit);
    child.on("exit", (code, signal) => this.onUnexpectedExit(code, signal));
    this.backoffMs = 100;
  }

  private onUnexpectedExit(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.stopping) return;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, this.opts.maxRestartBackoffMs);
    this.opts.logger.warn("managed redis-server exited; restarting", {
      dir: this.opts.dir,
      code,
      signal,
      inMs: delay,
    });
    metrics.managedRedisRestart(path.basename(this.opts.dir));
    this.restartTimer = setTimeout(() => {
      this.spawnAndWait().then(
        () => this.opts.logger.info("managed redis-server is back", { dir: this.opts.dir }),
        (err: unknown) => {
          if (this.stopping) return;
          this.opts.logger.error("managed redis-server restart failed", { err: messageOf(err) });
          this.onUnexpectedExit(null, null);
        },
      );
    }, delay);
  }
}

/** Unix socket paths are limited to ~107 bytes; long data dirs get a socket under the tmp dir. */
function socketPath(dir: string): string {
  const inDir = path.join(path.resolve(dir), "redis.sock");
  if (Buffer.byteLength(inDir) < 100) return inDir;
  const hash = createHash("sha256").update(path.resolve(dir)).digest("hex").slice(0, 16);
  return path.join(os.tmpdir(), `stashd-${hash}.sock`);
}

function readOrCreatePassword(dir: string): string {
  const file = path.join(dir, "password");
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  const password = randomBytes(24).toString("hex");
  writeFileSync(file, `${password}\n`, { mode: 0o600 });
  return password;
}

async function waitUntilReady(endpoint: RedisEndpoint, cancelled: () => boolean): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastError = "";
  while (Date.now() < deadline && !cancelled()) {
    try {
      const conn = await RedisConnection.open(endpoint, 1000);
      const reply = await conn.send(["PING"]);
      conn.destroy();
      if (reply.kind !== "error") return;
      lastError = reply.value;
    } catch (err) {
      lastError = messageOf(err);
    }
    await new Promise((r) => setTimeout(r, 30));
  }
  throw new AppError("startup_failed", `managed redis-server did not become ready: ${lastError}`);
}

async function stopStaleServer(dir: string): Promise<void> {
  const pidFile = path.join(dir, "redis.pid");
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, "utf8").trim());
  if (!Number.isInteger(pid) || pid <= 0 || !isRedisProcess(pid)) return;
  process.kill(pid, "SIGTERM");
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (isAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  if (isAlive(pid)) process.kill(pid, "SIGKILL");
}

function isRedisProcess(pid: number): boolean {
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    return /redis|valkey/.test(cmdline);
  } catch {
    return false;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return isRedisProcess(pid);
  } catch {
    return false;
  }
}

function lastLog(dir: string, stderr: string): string {
  try {
    const log = readFileSync(path.join(dir, "redis.log"), "utf8").trim().split("\n");
    return log.slice(-3).join(" | ") || stderr;
  } catch {
    return stderr || "no log";
  }
}

function missingBinary(bin: string, err: Error): AppError {
  return new AppError(
    "startup_failed",
    `cannot run ${bin} (${err.message}). Install Redis >= 7: on Debian/Ubuntu ` +
      "`sudo apt-get install redis-server`, on macOS `brew install redis`, " +
      "or set STASHD_REDIS_SERVER to the binary's path.",
  );
}
