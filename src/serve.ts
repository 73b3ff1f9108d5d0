import { rmSync } from "node:fs";
import type { AdminListener, MetricsScrape } from "./admin/server.js";
import { adminFor, chartCountsFor } from "./admin/wiring.js";
import type { CountRing } from "./admin/console/chart-counts.js";
import type { GatherCounts } from "./admin/console/charts.js";
import type { Config } from "./config/schema.js";
import { startKvService, type KvService } from "./kv/service.js";
import { startQueueService, type QueueService } from "./queue/service.js";
import { AppError } from "./shared/errors.js";
import { BodyBudget } from "./shared/http/body.js";
import { ConnectionCap, defaultConnectionCap } from "./shared/http/connections.js";
import type { Logger } from "./shared/log.js";
import { runtimeFile, writeRuntime } from "./runtime.js";
import type { ServiceName, Stashd } from "./index.js";

/** How the services of one process are started: alone (start()), or as a worker of `stashd start`. */
export interface ServeOptions {
  /** Releases the data dir when stopped; a worker holds none (its supervisor does). */
  release?: () => void;
  /** Whether this process writes and removes runtime.json (false in a worker). */
  ownsRuntimeFile?: boolean;
  /** /metrics of the whole server when this process is one of several (src/cli/worker.ts). */
  scrape?: MetricsScrape;
  /** A worker: hands over this process's chart counts, which the supervisor asks for. */
  shareCounts?: (counts: CountRing) => void;
  /** The first worker: the other workers' chart counts, through the supervisor. */
  gatherCounts?: GatherCounts;
}

/** Starts the chosen services and the admin listener in this process; see start(). */
export async function startServices(
  config: Config,
  services: ReadonlySet<ServiceName>,
  logger: Logger,
  opts: ServeOptions = {},
): Promise<Stashd> {
  const { release = () => undefined, ownsRuntimeFile = true } = opts;
  // One budget of request body bytes for both listeners (STASHD_MAX_INFLIGHT_BODY_BYTES).
  const bodies = new BodyBudget(config.maxInflightBodyBytes);
  // One bound on open connections for all three listeners (STASHD_MAX_CONNECTIONS).
  const connections = connectionCapOf(config);
  const kv = services.has("kv")
    ? await startKvService(config, logger.child("kv"), { bodies, connections })
    : undefined;
  let queue: QueueService | undefined;
  let admin: AdminListener | undefined;
  try {
    queue = services.has("queue")
      ? await startQueueService(config, logger.child("queue"), { bodies, connections })
      : undefined;
  } catch (err) {
    await kv?.close();
    throw err;
  }
  // The console (admin listener with both services) charts; a worker counts for it either way.
  const charting = config.adminEnabled && kv !== undefined && queue !== undefined;
  const counts =
    kv && queue && (charting || opts.shareCounts)
      ? chartCountsFor(config, kv, queue, charting)
      : undefined;
  if (counts) opts.shareCounts?.(counts);
  try {
    admin =
      config.adminEnabled && queue
        ? await adminFor(config, kv, queue, logger, {
            scrape: opts.scrape,
            charts: counts && { counts, gather: opts.gatherCounts },
            connections,
          })
        : undefined;
  } catch (err) {
    counts?.stop();
    await Promise.all([kv?.close(), queue?.close()]);
    throw err;
  }
  if (ownsRuntimeFile)
    writeRuntime(config.dataDir, {
      pid: process.pid,
      ...(kv ? { kvUrl: kv.url } : {}),
      ...(queue ? { queueUrl: queue.url } : {}),
      ...(admin ? { adminUrl: admin.url } : {}),
      startedAt: new Date().toISOString(),
    });
  return assemble(config, logger, { kv, queue, admin, counts }, release, ownsRuntimeFile);
}

/** STASHD_MAX_CONNECTIONS, or (0) the cap derived from the process's fd limit. */
function connectionCapOf(config: Config): ConnectionCap {
  return new ConnectionCap(
    config.maxConnections > 0 ? config.maxConnections : defaultConnectionCap(),
  );
}

/** What one process runs. */
interface Running {
  kv: KvService | undefined;
  queue: QueueService | undefined;
  admin: AdminListener | undefined;
  counts: CountRing | undefined;
}

function assemble(
  config: Config,
  logger: Logger,
  { kv, queue, admin, counts }: Running,
  release: () => void,
  ownsRuntimeFile: boolean,
): Stashd {
  let stopping: Promise<void> | undefined;
  const stop = async (): Promise<void> => {
    const started = Date.now();
    admin?.markStopping();
    counts?.stop();
    try {
      await Promise.all([kv?.close(), queue?.close()]);
      await admin?.close(0);
    } finally {
      if (ownsRuntimeFile) rmSync(runtimeFile(config.dataDir), { force: true });
      release();
      logger.info("stopped", { ms: Date.now() - started });
    }
  };
  return {
    config,
    kv: kv ? kvHandle(kv) : notStarted("kv"),
    queue: queue ? queueHandle(queue) : notStarted("queue"),
    admin: admin && { url: admin.url, port: admin.port, mount: admin.mount },
    stop: () => (stopping ??= stop()),
  };
}

function kvHandle(kv: KvService): Stashd["kv"] {
  const main = kv.databases().find((d) => d.name === "default") ?? kv.databases()[0];
  return {
    url: kv.url,
    port: kv.port,
    token: main?.token ?? "",
    readonlyToken: main?.readonlyToken ?? "",
    databases: () => kv.databases(),
  };
}

function queueHandle(queue: QueueService): Stashd["queue"] {
  return {
    url: queue.url,
    port: queue.port,
    token: queue.token,
    currentSigningKey: queue.currentSigningKey,
    nextSigningKey: queue.nextSigningKey,
  };
}

/**
 * Stands in for the handle of a service left out with `services`: reading any of its fields
 * throws, so a caller that needs it fails at once with the reason instead of using "" or
 * undefined as a URL. Symbol keys and `then` (probed by inspection and by await) read undefined.
 */
function notStarted<T extends object>(service: ServiceName): T {
  return new Proxy({} as T, {
    get(_target, key) {
      if (typeof key === "symbol" || key === "then") return undefined;
      throw new AppError(
        "bad_request",
        `stashd was started without the ${service} service (start({ services })): no ${service}.${key}`,
      );
    },
  });
}
