import type { Config } from "../config/schema.js";
import { readRegistry } from "../kv/databases/registry.js";
import type { KvDatabase } from "../kv/databases/database.js";
import type { KvService } from "../kv/service.js";
import { AppError } from "../shared/errors.js";
import type { ConnectionCap } from "../shared/http/connections.js";
import { withTimeout } from "../shared/wait.js";
import type { QueueService } from "../queue/service.js";
import type { Logger } from "../shared/log.js";
import { readQueueDepth } from "../queue/store/depth.js";
import type { Partitions } from "../queue/store/partitions.js";
import type { QueueRedis } from "../queue/store/redis.js";
import { CountRing } from "./console/chart-counts.js";
import { chartsAnswer, type ChartsAnswer, type GatherCounts } from "./console/charts.js";
import { createConsoleHandler } from "./console/handler.js";
import { readDataSize, type DataSize } from "./console/kv-data-size.js";
import { readPendingIds, readPendingNow } from "./console/pending.js";
import { queueGaugeRegistry } from "./queue-gauges.js";
import { checkReadiness } from "./readiness.js";
import { startAdmin, type AdminListener, type MetricsScrape } from "./server.js";

/** Longest a readiness PING may take before the check counts as failing. */
const READY_PING_TIMEOUT_MS = 2_000;
/** Longest a database's DBSIZE may take for the charts before its count shows as unknown. */
const DBSIZE_TIMEOUT_MS = 2_000;

/** How the console's charts count in this process, and where the other workers' counts are. */
export interface ChartWiring {
  /** This process's counts (chartCountsFor), sampling the backlog and key counts. */
  counts: CountRing;
  /** The other workers' counts, under `stashd start` with several workers (src/cli/worker.ts). */
  gather?: GatherCounts | undefined;
}

/**
 * The admin listener of one stashd instance, wired to its services, with the web console. A
 * stashd started without KV (start({ services })) gets the probes and metrics of its queue
 * only, and no console (which browses both).
 */
export async function adminFor(
  config: Config,
  kv: KvService | undefined,
  queue: QueueService,
  logger: Logger,
  opts: {
    scrape?: MetricsScrape | undefined;
    charts?: ChartWiring | undefined;
    connections?: ConnectionCap | undefined;
  } = {},
): Promise<AdminListener> {
  const admin = await startProbes(config, kv, queue, logger, opts);
  if (!kv) return admin;
  admin.mount("/console", consoleFor(config, kv, queue, logger, opts.charts));
  return admin;
}

/**
 * This process's chart counts (chart-counts.ts), started; with `sampling` (the process that runs
 * the console) each step's end also reads the backlog and every database's key count.
 */
export function chartCountsFor(
  config: Config,
  kv: KvService,
  queue: QueueService,
  sampling: boolean,
): CountRing {
  const counts = new CountRing({
    stepMs: config.consoleChartStepMs,
    databases: () => openDatabases(kv),
    sample: sampling
      ? async () => ({
          backlog: await readQueueDepth(queue.pool.partitions).catch(() => null),
          keys: Object.fromEntries((await databaseSizes(kv)).map((d) => [d.name, d.keys])),
        })
      : undefined,
  });
  counts.start();
  return counts;
}

function openDatabases(kv: KvService): KvDatabase[] {
  return kv.databases().flatMap((c) => {
    const db = kv.manager.get(c.name);
    return db ? [db] : [];
  });
}

/**
 * A database's key count: DBSIZE on stashd's own connection (summed over the masters of a
 * cluster), so the console's reads are not counted as the database's commands.
 */
async function dbSizeOf(kv: KvService, name: string): Promise<number> {
  const db = kv.manager.get(name);
  if (!db) throw new AppError("not_found", `no database ${name}`);
  const reply = await db.serverAdmin.exec(["DBSIZE"]);
  if (reply.kind !== "int") throw new AppError("redis_error", `DBSIZE answered ${reply.kind}`);
  return Number(reply.value);
}

/** A database's memory used and its limit (INFO memory on each master), on stashd's connection. */
function dataSizeOf(kv: KvService, name: string): Promise<DataSize> {
  const db = kv.manager.get(name);
  if (!db) return Promise.reject(new AppError("not_found", `no database ${name}`));
  return readDataSize(db.serverAdmin);
}

/** Each open database's key count, null for one that does not answer within DBSIZE_TIMEOUT_MS. */
async function databaseSizes(kv: KvService): Promise<{ name: string; keys: number | null }[]> {
  return Promise.all(
    openDatabases(kv).map(async (db) => ({
      name: db.name,
      keys: await withTimeout(dbSizeOf(kv, db.name), DBSIZE_TIMEOUT_MS).catch(() => null),
    })),
  );
}

/** The Charts page's answer: every worker's counts added up, and the key counts now. */
async function chartsOf(kv: KvService, charts: ChartWiring): Promise<ChartsAnswer> {
  const [others, databases] = await Promise.all([
    charts.gather ? charts.gather() : Promise.resolve([]),
    databaseSizes(kv),
  ]);
  const own = charts.counts.snapshot();
  return chartsAnswer({ stepMs: charts.counts.stepMs, own, others, databases });
}

/** The web console (docs/console.md), calling the services' public APIs. */
function consoleFor(
  config: Config,
  kv: KvService,
  queue: QueueService,
  logger: Logger,
  charts: ChartWiring | undefined,
) {
  return createConsoleHandler({
    queueUrl: queue.url,
    queueToken: () => queue.currentToken(),
    kvUrl: kv.url,
    databases: () => kv.databases(),
    dbSize: (name) => dbSizeOf(kv, name),
    dataSize: (name) => dataSizeOf(kv, name),
    consoleToken: config.consoleToken,
    queueDepth: () => readQueueDepth(queue.pool.partitions),
    pendingNow: (q) => readPendingNow(queue.pool.partitions, q),
    pendingIds: (q) => readPendingIds(queue.pool.partitions, q),
    charts: charts && (() => chartsOf(kv, charts)),
    sessionTtlMs: config.consoleSessionTtlMs,
    loginThrottle: {
      perAddress: config.consoleLoginFailuresPerAddress,
      global: config.consoleLoginFailuresGlobal,
      windowMs: config.consoleLoginWindowMs,
    },
    logger: logger.child("console"),
  });
}

function startProbes(
  config: Config,
  kv: KvService | undefined,
  queue: QueueService,
  logger: Logger,
  {
    scrape,
    connections,
  }: { scrape?: MetricsScrape | undefined; connections?: ConnectionCap | undefined },
): Promise<AdminListener> {
  const timeoutMs = Math.min(READY_PING_TIMEOUT_MS, config.redisConnectTimeoutMs);
  return startAdmin({
    host: config.adminHost,
    port: config.adminPort,
    requestTimeoutMs: config.requestTimeoutMs,
    logger: logger.child("admin"),
    registries: [queueGaugeRegistry(queue.pool.partitions)],
    scrape,
    connections,
    readiness: () =>
      checkReadiness({
        databases: () =>
          (kv?.databases() ?? []).flatMap((c) => {
            const db = kv?.manager.get(c.name);
            return db ? [db] : [];
          }),
        registered: () => (kv ? readRegistry(config.dataDir).map((r) => r.name) : []),
        queuePool: everyPartition(queue.pool.partitions),
        queueManaged: queue.managed,
        queueStoreRefusal: () => queue.storeRefusal(),
        timeoutMs,
      }),
  });
}

/**
 * The readiness check's queue Redis: a command is sent to every partition's Redis (on a cluster
 * each partition's master; on a single Redis the same one, once per partition) and answered with
 * the first error, else partition 0's reply, so the queue is ready only when every partition is.
 */
function everyPartition(parts: Partitions): Pick<QueueRedis, "exec"> {
  return {
    exec: async (argv) => {
      const replies = await parts.each((p) => p.redis.exec(argv));
      return replies.find((r) => r.kind === "error") ?? (replies[0] as (typeof replies)[number]);
    },
  };
}
