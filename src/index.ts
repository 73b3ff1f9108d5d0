import type { RequestListener } from "node:http";
import { loadConfig, type ConfigOverrides, type FlagValues } from "./config/load.js";
import type { Config } from "./config/schema.js";
import type { DatabaseCredentials } from "./kv/databases/database-manager.js";
import { ensureDefaultDatabase } from "./kv/databases/default-database.js";
import { createLogger } from "./shared/log.js";
import { acquireInstanceLock } from "./runtime.js";
import { emptyManagedStores } from "./dev.js";
import { startServices } from "./serve.js";

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
    return await startServices(config, new Set(services), logger, { release });
  } catch (err) {
    release();
    throw err;
  }
}
