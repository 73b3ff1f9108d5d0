import type { Config } from "../config/schema.js";
import { readRegistry } from "../kv/databases/registry.js";
import type { KvService } from "../kv/service.js";
import type { QueueService } from "../queue/service.js";
import type { Logger } from "../shared/log.js";
import { readQueueDepth } from "../queue/store/depth.js";
import type { Partitions } from "../queue/store/partitions.js";
import type { QueueRedis } from "../queue/store/redis.js";
import { createConsoleHandler } from "./console/handler.js";
import { queueGaugeRegistry } from "./queue-gauges.js";
import { checkReadiness } from "./readiness.js";
import { startAdmin, type AdminListener, type MetricsScrape } from "./server.js";

/** Longest a readiness PING may take before the check counts as failing. */
const READY_PING_TIMEOUT_MS = 2_000;

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
  scrape?: MetricsScrape,
): Promise<AdminListener> {
  const admin = await startProbes(config, kv, queue, logger, scrape);
  if (kv) admin.mount("/console", consoleFor(config, kv, queue, logger));
  return admin;
}

/** The web console (docs/console.md), calling the services' public APIs. */
function consoleFor(config: Config, kv: KvService, queue: QueueService, logger: Logger) {
  return createConsoleHandler({
    queueUrl: queue.url,
    queueToken: () => queue.currentToken(),
    kvUrl: kv.url,
    databases: () => kv.databases(),
    consoleToken: config.consoleToken,
    queueDepth: () => readQueueDepth(queue.pool.partitions),
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
  scrape: MetricsScrape | undefined,
): Promise<AdminListener> {
  const timeoutMs = Math.min(READY_PING_TIMEOUT_MS, config.redisConnectTimeoutMs);
  return startAdmin({
    host: config.adminHost,
    port: config.adminPort,
    requestTimeoutMs: config.requestTimeoutMs,
    logger: logger.child("admin"),
    registries: [queueGaugeRegistry(queue.pool.partitions)],
    scrape,
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
