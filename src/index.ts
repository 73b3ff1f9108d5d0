import { rmSync } from "node:fs";
import { loadConfig, type ConfigOverrides } from "./config/load.js";
import type { Config } from "./config/schema.js";
import type { DatabaseCredentials } from "./kv/databases.js";
import { startKvService } from "./kv/service.js";
import { startQueueService, type QueueService } from "./queue/service.js";
import { createLogger } from "./shared/log.js";
import { runtimeFile, writeRuntime } from "./runtime.js";

export type { Config } from "./config/schema.js";
export type { DatabaseCredentials } from "./kv/databases.js";

export interface StartOptions extends ConfigOverrides {
  /** Environment to read settings from (default: process.env). */
  env?: NodeJS.ProcessEnv;
}

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
  /** Graceful stop: finishes in-flight requests, closes streams, stops managed Redis servers. */
  stop(): Promise<void>;
}

/**
 * Starts stashd in this process. For users' own test suites:
 *
 *   const stashd = await start({ dataDir: tmp, kvPort: 0, queuePort: 0 });
 *   process.env.UPSTASH_REDIS_REST_URL = stashd.kv.url;
 *   process.env.UPSTASH_REDIS_REST_TOKEN = stashd.kv.token;
 *   …
 *   await stashd.stop();
 */
export async function start(options: StartOptions = {}): Promise<Stashd> {
  const { env, ...overrides } = options;
  const config = loadConfig(overrides, env);
  const logger = createLogger(config.logLevel);
  const kv = await startKvService(config, logger.child("kv"));
  let queue: QueueService;
  try {
    queue = await startQueueService(config, logger.child("queue"));
  } catch (err) {
    await kv.close();
    throw err;
  }
  writeRuntime(config.dataDir, {
    pid: process.pid,
    kvUrl: kv.url,
    queueUrl: queue.url,
    startedAt: new Date().toISOString(),
  });
  const main = kv.databases().find((d) => d.name === "default") ?? kv.databases()[0];
  let stopping: Promise<void> | undefined;
  return {
    config,
    kv: {
      url: kv.url,
      port: kv.port,
      token: main?.token ?? "",
      readonlyToken: main?.readonlyToken ?? "",
      databases: () => kv.databases(),
    },
    queue: {
      url: queue.url,
      port: queue.port,
      token: queue.token,
      currentSigningKey: queue.currentSigningKey,
      nextSigningKey: queue.nextSigningKey,
    },
    stop: () => {
      stopping ??= Promise.all([kv.close(), queue.close()])
        .then(() => undefined)
        .finally(() => rmSync(runtimeFile(config.dataDir), { force: true }));
      return stopping;
    },
  };
}
