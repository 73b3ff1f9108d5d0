import type { RequestListener } from "node:http";
import { rmSync } from "node:fs";
import type { AdminListener } from "./admin/server.js";
import { loadConfig, type ConfigOverrides, type FlagValues } from "./config/load.js";
import type { Config } from "./config/schema.js";
import type { DatabaseCredentials } from "./kv/databases/database-manager.js";
import { ensureDefaultDatabase } from "./kv/databases/default-database.js";
import { startKvService, type KvService } from "./kv/service.js";
import { startQueueService, type QueueService } from "./queue/service.js";
import { BodyBudget } from "./shared/http/body.js";
import { AppError } from "./shared/errors.js";
import { createLogger, type Logger } from "./shared/log.js";
import { acquireInstanceLock, runtimeFile, writeRuntime } from "./runtime.js";
import { adminFor } from "./admin/wiring.js";
import { emptyManagedStores } from "./dev.js";

export type { Config } from "./config/schema.js";
export type { DatabaseCredentials } from "./kv/databases/database-manager.js";
export { DEV_CREDENTIALS, DEV_DATA_DIR, devOverrides } from "./dev.js";

export interface StartOptions extends ConfigOverrides {
  /** Environment to read settings from (default: process.env). */
  env?: NodeJS.ProcessEnv;
  /** Command-line values as typed (the CLI), validated like environment variables. */
  flags?: FlagValues;
  /**
   * Start from empty managed stores (queue and KV data deleted, tokens kept), as `stashd dev
   * --fresh` does; see dev.ts `emptyManagedStores`. Done once the data dir is locked.
   */
  fresh?: boolean;
  /**
   * Which services to run (default both). An embedding that uses one of them, such as a test
   * suite of the KV gateway, leaves out the other's Redis and listener. The admin listener
   * needs the queue (its readiness and gauges read the queue Redis); without KV it has no web
   * console. Reading `kv` or `queue` of a stashd that does not run it throws.
   */
  services?: readonly ServiceName[];
}

/** The two services one stashd runs. */
export type ServiceName = "kv" | "queue";

export interface Stashd {
  config: Config;
  kv: {
    /** Base URL for UPSTASH_REDIS_REST_URL. */
    url: string;
    port: number;
    /** The `default` database's tokens. */
    token: string;
    readonlyToken: string;
    databases(): DatabaseCredentials[];
  };
  queue: {
    /** Base URL for QSTASH_URL. */
    url: string;
    port: number;
    token: string;
    currentSigningKey: string;
    nextSigningKey: string;
  };
  /** The admin listener (/healthz, /readyz, /metrics); undefined when STASHD_ADMIN=false. */
  admin:
    | {
        url: string;
        port: number;
        /** Serves a handler under a path prefix (for a web console); it authenticates itself. */
        mount(prefix: string, handler: RequestListener): void;
      }
    | undefined;
  /**
   * Graceful stop, bounded by STASHD_SHUTDOWN_GRACE_MS: finishes in-flight requests and
   * deliveries, closes streams, stops managed Redis servers, releases the data dir.
   */
  stop(): Promise<void>;
}

/**
 * Starts stashd in this process. For users' own test suites:
 *
 *   const stashd = await start({ dataDir: tmp, kvPort: 0, queuePort: 0, adminPort: 0 });
 *   process.env.UPSTASH_REDIS_REST_URL = stashd.kv.url;
 *   process.env.UPSTASH_REDIS_REST_TOKEN = stashd.kv.token;
 *   …
 *   await stashd.stop();
 *
 * The data dir is locked for the life of the instance: a second start on it (in this or another
 * process) is refused with the running one's pid and URLs.
 */
export async function start(options: StartOptions = {}): Promise<Stashd> {
  const { env, flags, fresh, services = ["kv", "queue"], ...overrides } = options;
  const config = loadConfig(overrides, env, flags);
  const logger = createLogger(config.logLevel, "stashd", { format: config.logFormat });
  const release = acquireInstanceLock(config.dataDir);
  try {
    if (fresh) emptyManagedStores(config);
    if (services.includes("kv")) ensureDefaultDatabase(config);
    return await startServices(config, new Set(services), logger, release);
  } catch (err) {
    release();
    throw err;
  }
}

async function startServices(
  config: Config,
  services: ReadonlySet<ServiceName>,
  logger: Logger,
  release: () => void,
): Promise<Stashd> {
  // One budget of request body bytes for both listeners (STASHD_MAX_INFLIGHT_BODY_BYTES).
  const bodies = new BodyBudget(config.maxInflightBodyBytes);
  const kv = services.has("kv")
    ? await startKvService(config, logger.child("kv"), bodies)
    : undefined;
  let queue: QueueService | undefined;
  let admin: AdminListener | undefined;
  try {
    queue = services.has("queue")
      ? await startQueueService(config, logger.child("queue"), { bodies })
      : undefined;
  } catch (err) {
    await kv?.close();
    throw err;
  }
  try {
    admin = config.adminEnabled && queue ? await adminFor(config, kv, queue, logger) : undefined;
  } catch (err) {
    await Promise.all([kv?.close(), queue?.close()]);
    throw err;
  }
  writeRuntime(config.dataDir, {
    pid: process.pid,
    ...(kv ? { kvUrl: kv.url } : {}),
    ...(queue ? { queueUrl: queue.url } : {}),
    ...(admin ? { adminUrl: admin.url } : {}),
    startedAt: new Date().toISOString(),
  });
  return assemble(config, logger, kv, queue, admin, release);
}

function assemble(
  config: Config,
  logger: Logger,
  kv: KvService | undefined,
  queue: QueueService | undefined,
  admin: AdminListener | undefined,
  release: () => void,
): Stashd {
  let stopping: Promise<void> | undefined;
  const stop = async (): Promise<void> => {
    const started = Date.now();
    admin?.markStopping();
    try {
      await Promise.all([kv?.close(), queue?.close()]);
      await admin?.close(0);
    } finally {
      rmSync(runtimeFile(config.dataDir), { force: true });
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
