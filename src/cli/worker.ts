import type { Registry } from "prom-client";
import type { CountRing } from "../admin/console/chart-counts.js";
import type { WorkerCounts } from "../admin/console/charts.js";
import { loadConfig } from "../config/load.js";
import { createLogger } from "../shared/log.js";
import { registry as processRegistry } from "../shared/metrics.js";
import { runManagedRedisElsewhere, type HostedRedisOptions } from "../shared/redis/managed.js";
import type { RedisEndpoint } from "../shared/redis/connection.js";
import { messageOf } from "../shared/errors.js";
import { startServices } from "../serve.js";
import type { Invocation } from "./main.js";
import {
  isProtocolMessage,
  Pending,
  type FromWorker,
  type MetricsJson,
  type ToWorker,
  type WorkerSetup,
} from "./worker-ipc.js";

/** A managed redis-server may take its stale predecessor's stop (10 s) and its start (15 s). */
const HOSTED_TIMEOUT_MS = 30_000;
const SCRAPE_TIMEOUT_MS = 10_000;
/** The supervisor answers a gather within STASHD_CONSOLE_CHART_GATHER_TIMEOUT_MS; this only guards its loss. */
const GATHER_TIMEOUT_MS = 30_000;
const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/**
 * A worker of `stashd start` (src/cli/supervisor.ts): serves the KV and queue APIs on the ports it
 * shares with the other workers, its managed redis-servers run by the supervisor. The first
 * worker (index 0) also runs the admin listener, whose /metrics asks the supervisor for every
 * process's metrics. Stops (draining, as `stashd start` does) when the supervisor says so or on
 * a signal; exits at once when the supervisor is gone (its IPC channel closed). Returns the exit
 * code.
 */
export async function runWorker(inv: Invocation): Promise<number> {
  const channel = new SupervisorChannel();
  const setup = await channel.setup;
  const config = loadConfig(setup.overrides, process.env, inv.flags);
  const logger = createLogger(config.logLevel, "stashd", { format: config.logFormat });
  runManagedRedisElsewhere(channel.managedHost());
  const stopped = channel.stopRequested;
  for (const s of STOP_SIGNALS) process.on(s, () => channel.requestStop(`${s} received`));
  const stashd = await startServices(config, new Set(["kv", "queue"]), logger, {
    ownsRuntimeFile: false,
    shareCounts: (counts) => channel.shareCounts(counts),
    ...(setup.index === 0
      ? { scrape: (regs: Registry[]) => channel.scrape(regs), gatherCounts: () => channel.gather() }
      : {}),
  });
  channel.send({
    t: "ready",
    urls: { kvUrl: stashd.kv.url, queueUrl: stashd.queue.url, adminUrl: stashd.admin?.url },
  });
  const reason = await stopped;
  logger.info("worker stopping", { worker: setup.index, reason });
  try {
    await stashd.stop();
    return 0;
  } catch (err) {
    logger.error("worker shutdown error", { err: messageOf(err) });
    return 1;
  }
}

/** This worker's end of the IPC channel to the supervisor. */
class SupervisorChannel {
  readonly setup: Promise<WorkerSetup>;
  readonly stopRequested: Promise<string>;
  private gotSetup: (s: WorkerSetup) => void = () => undefined;
  private stop: (reason: string) => void = () => undefined;
  private readonly hosted = new Pending<{ endpoint: RedisEndpoint; pid: number | undefined }>(
    HOSTED_TIMEOUT_MS,
    "managed redis-server from the supervisor",
  );
  private readonly scrapes = new Pending<string>(SCRAPE_TIMEOUT_MS, "metrics of every worker");
  private readonly gathers = new Pending<WorkerCounts[]>(
    GATHER_TIMEOUT_MS,
    "chart counts of the other workers",
  );
  /** This process's chart counts, once its services run (until then it has none to give). */
  private counts: CountRing | undefined;

  constructor() {
    this.setup = new Promise((resolve) => (this.gotSetup = resolve));
    this.stopRequested = new Promise((resolve) => (this.stop = resolve));
    process.on("message", (m: unknown) => {
      if (isProtocolMessage<ToWorker>(m)) void this.receive(m);
    });
    // The supervisor was killed (a graceful stop asks first): end at once, as one process killed
    // would, so a restarted supervisor never meets a worker of the old one. What this worker
    // acknowledged is in Redis; its leases are reaped after the restart.
    process.once("disconnect", () => process.exit(1));
    this.send({ t: "hello" });
  }

  requestStop(reason: string): void {
    this.stop(reason);
  }

  send(msg: FromWorker): void {
    if (process.connected) process.send?.(msg);
  }

  /** Managed redis-servers, asked of the supervisor (ManagedRedisHost). */
  managedHost() {
    return {
      ensure: (opts: HostedRedisOptions) => {
        const { id, answer } = this.hosted.open();
        this.send({ t: "ensure", id, opts });
        return answer;
      },
      release: (dir: string) => {
        this.send({ t: "release", dir });
        return Promise.resolve();
      },
      forceRestart: (dir: string, pid?: number) =>
        this.send({ t: "force-restart", dir, ...(pid === undefined ? {} : { pid }) }),
    };
  }

  /** /metrics of the whole server: this listener's own registries, counted once, plus every process's. */
  async scrape(listenerOnly: Registry[]): Promise<string> {
    const json = await Promise.all(
      listenerOnly.map((r) => r.getMetricsAsJSON() as Promise<MetricsJson>),
    );
    const { id, answer } = this.scrapes.open();
    this.send({ t: "scrape", id, listenerOnly: json });
    return answer;
  }

  shareCounts(counts: CountRing): void {
    this.counts = counts;
  }

  /** Every other worker's chart points (or why not), through the supervisor. */
  gather(): Promise<WorkerCounts[]> {
    const { id, answer } = this.gathers.open();
    this.send({ t: "gather", id });
    return answer;
  }

  private async receive(m: ToWorker): Promise<void> {
    switch (m.t) {
      case "setup":
        return this.gotSetup(m.setup);
      case "hosted":
        return this.hosted.settle(
          m.id,
          m.endpoint ? { endpoint: m.endpoint, pid: m.pid } : new Error(m.error ?? "no endpoint"),
        );
      case "scraped":
        return this.scrapes.settle(m.id, m.text ?? new Error(m.error ?? "no metrics"));
      case "collect": {
        const metrics = (await processRegistry.getMetricsAsJSON()) as MetricsJson;
        return this.send({ t: "collected", id: m.id, metrics });
      }
      case "count":
        return this.send({ t: "counted", id: m.id, points: this.counts?.snapshot() ?? [] });
      case "gathered":
        return this.gathers.settle(m.id, m.workers);
      case "stop":
        return this.requestStop("supervisor asked");
    }
  }
}
