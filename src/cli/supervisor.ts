import cluster, { type Worker } from "node:cluster";
import { rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { AggregatorRegistry } from "prom-client";
import type { CountPoint } from "../admin/console/chart-counts.js";
import type { WorkerCounts } from "../admin/console/charts.js";
import type { Config } from "../config/schema.js";
import { ensureDefaultDatabase } from "../kv/databases/default-database.js";
import { managedDir, readRegistry } from "../kv/databases/registry.js";
import { loadQueueCredentials } from "../queue/credentials.js";
import { managedQueueDir } from "../queue/service.js";
import { acquireInstanceLock, runtimeFile, writeRuntime } from "../runtime.js";
import { AppError, messageOf } from "../shared/errors.js";
import type { Logger } from "../shared/log.js";
import { metrics, registry as processRegistry } from "../shared/metrics.js";
import { ManagedRedis, type HostedRedisOptions } from "../shared/redis/managed.js";
import {
  isProtocolMessage,
  Pending,
  type FromWorker,
  type MetricsJson,
  type ToWorker,
  type WorkerUrls,
} from "./worker-ipc.js";

/** A worker that does not answer a metrics collection in time is left out of that scrape. */
const COLLECT_TIMEOUT_MS = 5_000;
/** Past the shutdown grace, a worker still running is killed. */
const STOP_MARGIN_MS = 5_000;
/** A worker that ran this long before dying is restarted at once (back-off reset). */
const HEALTHY_RUN_MS = 10_000;

/** How many workers `stashd start` runs: STASHD_WORKERS, or one per core when 0. */
export function workerCount(config: Config): number {
  return config.workers > 0 ? config.workers : os.availableParallelism();
}

/** What `stashd start` prints and writes to runtime.json once every worker serves. */
export interface SupervisedServer {
  config: Config;
  urls: WorkerUrls;
  stop(): Promise<void>;
}

/**
 * The supervisor of `stashd start` with several workers (docs/operations.md, Workers). It owns
 * what must exist once per data dir: the instance lock, the registry's `default` database, the
 * queue credentials, runtime.json and every managed redis-server (the workers ask for those by
 * IPC, see ManagedRedisHost). It forks `count` workers with node:cluster, which share the KV,
 * queue and admin ports (the first worker alone runs the admin listener); a worker that exits
 * unasked is replaced with back-off, the others keep their connections. `stop()` asks every
 * worker to drain (bounded by STASHD_SHUTDOWN_GRACE_MS), then stops the managed servers.
 */
export async function startSupervisor(
  config: Config,
  logger: Logger,
  count: number,
): Promise<SupervisedServer> {
  const release = acquireInstanceLock(config.dataDir);
  const servers = new ManagedServers(config, logger.child("redis"));
  const workers = new Workers(config, logger, servers, count);
  try {
    ensureDefaultDatabase(config);
    loadQueueCredentials(config);
    const urls = await workers.start();
    writeRuntimeOf(config, urls);
    logger.info("workers serving", { workers: count });
    return { config, urls, stop: once(() => stopAll(config, logger, workers, servers, release)) };
  } catch (err) {
    await workers.stop();
    await servers.stopAll();
    release();
    throw err;
  }
}

async function stopAll(
  config: Config,
  logger: Logger,
  workers: Workers,
  servers: ManagedServers,
  release: () => void,
): Promise<void> {
  const started = Date.now();
  try {
    await workers.stop();
    await servers.stopAll();
  } finally {
    rmSync(runtimeFile(config.dataDir), { force: true });
    release();
    logger.info("stopped", { ms: Date.now() - started });
  }
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => (running ??= fn());
}

/** The workers: forking, their setup, replacing the ones that die, metrics, stopping. */
class Workers {
  private readonly live = new Map<number, Worker>();
  private stopping = false;
  private started = false;
  private readonly collections = new Pending<MetricsJson>(COLLECT_TIMEOUT_MS, "worker metrics");
  private readonly countings: Pending<CountPoint[]>;
  private readonly backoffMs = new Map<number, number>();

  constructor(
    private readonly config: Config,
    private readonly logger: Logger,
    private readonly servers: ManagedServers,
    private readonly count: number,
  ) {
    this.countings = new Pending(config.consoleChartGatherTimeoutMs, "worker chart counts");
  }

  /**
   * Forks the first worker and waits until it serves (it makes the ACL users and seeds the
   * signing keys alone), then the rest. Rejects if any exits before serving. Every worker listens
   * with the same settings: node:cluster shares a listening socket between workers that ask for
   * the same address and port (port 0 included: one random port for all of them).
   */
  async start(): Promise<WorkerUrls> {
    const first = await this.fork(0);
    const rest = Array.from({ length: this.count - 1 }, (_, i) => this.fork(i + 1));
    await Promise.all(rest);
    this.started = true;
    return first;
  }

  /** Asks every worker to drain; kills those still running past the grace. */
  async stop(): Promise<void> {
    this.stopping = true;
    const exits = [...this.live.values()].map((w) => exited(w));
    for (const w of this.live.values()) send(w, { t: "stop" });
    const deadline = this.config.shutdownGraceMs + STOP_MARGIN_MS;
    const timer = setTimeout(() => {
      for (const w of this.live.values()) w.process.kill("SIGKILL");
    }, deadline);
    await Promise.all(exits);
    clearTimeout(timer);
    metrics.workers(0);
  }

  private fork(index: number): Promise<WorkerUrls> {
    const worker = cluster.fork();
    this.live.set(index, worker);
    metrics.workers(this.live.size);
    const setup = { index, overrides: { adminEnabled: index === 0 && this.config.adminEnabled } };
    const startedAt = Date.now();
    return new Promise<WorkerUrls>((resolve, reject) => {
      let serving = false;
      worker.on("message", (m: unknown) => {
        if (!isProtocolMessage<FromWorker>(m)) return;
        if (m.t === "hello") send(worker, { t: "setup", setup });
        else if (m.t === "ready") {
          serving = true;
          // A replacement admin listener on port 0 gets a new port once its predecessor's closed.
          if (this.started && index === 0) writeRuntimeOf(this.config, m.urls);
          resolve(m.urls);
        } else void this.receive(worker, m);
      });
      worker.on("exit", (code, signal) => {
        if (this.live.get(index) === worker) this.live.delete(index);
        metrics.workers(this.live.size);
        if (!serving) {
          reject(
            new AppError(
              "startup_failed",
              `worker ${index} exited (${signal ?? String(code)}) before serving; its messages are above`,
            ),
          );
        }
        // Once stashd serves, a worker slot is never left empty: a replacement that could not
        // start (its Redis down, say) is tried again, with the back-off growing.
        if (!this.stopping && (serving || this.started)) {
          this.replace(index, code, signal, Date.now() - startedAt);
        }
      });
    });
  }

  /** Forks a worker in place of one that exited unasked, after a back-off if it died young. */
  private replace(index: number, code: number | null, signal: string | null, ranMs: number): void {
    const previous = this.backoffMs.get(index) ?? 0;
    const delay =
      ranMs >= HEALTHY_RUN_MS
        ? 0
        : Math.min(Math.max(100, previous * 2), this.config.managedRestartMaxBackoffMs);
    this.backoffMs.set(index, delay);
    metrics.workerRestarted();
    this.logger.warn("worker exited; starting another", {
      worker: index,
      code,
      signal,
      inMs: delay,
    });
    setTimeout(() => {
      if (this.stopping) return;
      this.fork(index).catch((err: unknown) => {
        this.logger.error("replacement worker failed to start; trying again", {
          worker: index,
          err: messageOf(err),
        });
      });
    }, delay).unref();
  }

  private async receive(worker: Worker, m: FromWorker): Promise<void> {
    switch (m.t) {
      case "ensure":
        try {
          const hosted = await this.servers.ensure(m.opts);
          return send(worker, { t: "hosted", id: m.id, ...hosted });
        } catch (err) {
          return send(worker, { t: "hosted", id: m.id, error: messageOf(err) });
        }
      case "release":
        return this.servers.release(m.dir);
      case "force-restart":
        return this.servers.forceRestart(m.dir, m.pid);
      case "collected":
        return this.collections.settle(m.id, m.metrics);
      case "counted":
        return this.countings.settle(m.id, m.points);
      case "gather":
        return send(worker, { t: "gathered", id: m.id, workers: await this.gather(worker) });
      case "scrape":
        try {
          return send(worker, { t: "scraped", id: m.id, text: await this.scrape(m.listenerOnly) });
        } catch (err) {
          return send(worker, { t: "scraped", id: m.id, error: messageOf(err) });
        }
      case "ready":
      case "hello":
        return;
    }
  }

  /**
   * The chart points of every worker slot but the asker's, each asked at once and bounded by
   * STASHD_CONSOLE_CHART_GATHER_TIMEOUT_MS: a worker that does not answer in time, or a slot whose
   * worker is being replaced, is reported with the reason (the page names it).
   */
  private gather(asker: Worker): Promise<WorkerCounts[]> {
    const slots = Array.from({ length: this.count }, (_, index) => index);
    return Promise.all(
      slots.flatMap((index): Promise<WorkerCounts>[] => {
        const w = this.live.get(index);
        if (w === asker) return [];
        const pid = w?.process.pid ?? null;
        if (!w || !w.isConnected()) {
          return [Promise.resolve({ worker: index, pid, error: "not running (being replaced)" })];
        }
        const { id, answer } = this.countings.open();
        send(w, { t: "count", id });
        return [
          answer.then(
            (points) => ({ worker: index, pid, points }),
            (err: unknown) => ({ worker: index, pid, error: messageOf(err) }),
          ),
        ];
      }),
    );
  }

  /**
   * Every process's metrics added up (prom-client's cluster aggregation: counters and histograms
   * summed, per-metric `aggregator` otherwise), with the admin listener's own registries once.
   */
  private async scrape(listenerOnly: MetricsJson[]): Promise<string> {
    const collected = await Promise.all(
      [...this.live.values()].map((w) => {
        const { id, answer } = this.collections.open();
        send(w, { t: "collect", id });
        return answer.catch(() => undefined);
      }),
    );
    const own = (await processRegistry.getMetricsAsJSON()) as MetricsJson;
    const all = [own, ...collected.filter((c) => c !== undefined), ...listenerOnly];
    return AggregatorRegistry.aggregate(all).metrics();
  }
}

/**
 * The managed redis-servers of the data dir, run here for the workers: one per directory, started
 * on the first worker's `ensure` (a new database's included), stopped at shutdown, or when a
 * worker releases a KV database's server and the registry no longer lists it as managed.
 */
class ManagedServers {
  private readonly servers = new Map<string, Promise<ManagedRedis>>();

  constructor(
    private readonly config: Config,
    private readonly logger: Logger,
  ) {}

  async ensure(
    opts: HostedRedisOptions,
  ): Promise<{ endpoint: ManagedRedis["endpoint"]; pid?: number }> {
    const dir = this.inside(opts.dir);
    let server = this.servers.get(dir);
    if (!server) {
      server = this.launch({ ...opts, dir });
      this.servers.set(dir, server);
      server.catch(() => this.servers.delete(dir));
    }
    const running = await server;
    return {
      endpoint: running.endpoint,
      ...(running.pid !== undefined ? { pid: running.pid } : {}),
    };
  }

  async release(dir: string): Promise<void> {
    const key = path.resolve(dir);
    if (key === path.resolve(managedQueueDir(this.config.dataDir))) return;
    const wanted = readRegistry(this.config.dataDir).some(
      (r) => !r.redisUrl && path.resolve(managedDir(this.config.dataDir, r.name)) === key,
    );
    const server = this.servers.get(key);
    if (wanted || !server) return;
    this.servers.delete(key);
    await (await server).stop();
  }

  forceRestart(dir: string, pid?: number): void {
    void this.servers.get(path.resolve(dir))?.then((s) => s.forceRestart(pid));
  }

  async stopAll(): Promise<void> {
    const all = [...this.servers.values()];
    this.servers.clear();
    await Promise.all(all.map(async (s) => (await s.catch(() => undefined))?.stop()));
  }

  private async launch(opts: HostedRedisOptions): Promise<ManagedRedis> {
    const server = new ManagedRedis({ ...opts, logger: this.logger });
    await server.start();
    return server;
  }

  /** The directory, refused unless inside the data dir (a worker only names its own servers'). */
  private inside(dir: string): string {
    const root = path.resolve(this.config.dataDir);
    const resolved = path.resolve(dir);
    if (!resolved.startsWith(`${root}${path.sep}`)) {
      throw new AppError("bad_request", `managed redis-server dir ${dir} is outside the data dir`);
    }
    return resolved;
  }
}

function send(worker: Worker, msg: ToWorker): void {
  if (worker.isConnected()) worker.send(msg);
}

function exited(worker: Worker): Promise<void> {
  if (worker.process.exitCode !== null || worker.process.signalCode !== null)
    return Promise.resolve();
  return new Promise((resolve) => worker.once("exit", () => resolve()));
}

/** runtime.json for the supervisor's pid and the workers' URLs (`stashd credentials` reads it). */
function writeRuntimeOf(config: Config, urls: WorkerUrls): void {
  const { kvUrl, queueUrl, adminUrl } = urls;
  writeRuntime(config.dataDir, {
    pid: process.pid,
    kvUrl,
    queueUrl,
    ...(adminUrl ? { adminUrl } : {}),
    startedAt: new Date().toISOString(),
  });
}
