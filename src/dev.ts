import { rmSync } from "node:fs";
import { loadConfig, type ConfigOverrides, type FlagValues } from "./config/load.js";
import type { Config } from "./config/schema.js";
import { managedDir, readRegistry } from "./kv/registry.js";
import { managedQueueDir } from "./queue/service.js";

/**
 * `stashd dev`: stashd in the place of the vendor's QStash dev server (`npx @upstash/qstash-cli
 * dev`), so the SDKs' dev mode (`QSTASH_DEV=true`, `devMode: true`) adopts it with no other
 * setting. In dev mode the SDKs call `http://127.0.0.1:${QSTASH_DEV_PORT || 8080}` with the dev
 * server's user-1 token and verify with its key pair, and first check `GET /v2/keys` for exactly
 * that pair (docs/qstash-protocol.md §2.10); these are the values they ship.
 */

/**
 * The vendor dev server's user 1, as `DEV_CREDENTIALS` in @upstash/qstash (src/dev-server/
 * constants.ts; test/ops/dev-mode.test.ts checks that the installed SDK still ships them).
 * Public values: anyone can sign for them, so `stashd dev` listens on loopback only.
 */
export const DEV_CREDENTIALS = {
  token: "eyJVc2VySUQiOiJkZWZhdWx0VXNlciIsIlBhc3N3b3JkIjoiZGVmYXVsdFBhc3N3b3JkIn0=",
  currentSigningKey: "sig_7kYjw48mhY7kAjqNGcy6cr29RJ6r",
  nextSigningKey: "sig_5ZB6DVzB1wjE8S6rZ7eenA8Pdnhs",
} as const;

/** Data dir of `stashd dev` unless `--data-dir` names one (apart from `stashd start`'s). */
export const DEV_DATA_DIR = "./.stashd-dev";

const LOOPBACK = "127.0.0.1";

export interface DevInput {
  /** Command-line setting values (`--kv-port`, `--qstash-dev-port`…), validated as usual. */
  flags?: FlagValues;
  /** `--data-dir`; STASHD_DATA_DIR is not read, so dev state never lands in production's dir. */
  dataDir?: string | undefined;
  env?: NodeJS.ProcessEnv;
}

/**
 * The settings `stashd dev` forces over flags and environment: both HTTP services and the admin
 * listener on loopback, the queue on QSTASH_DEV_PORT (the port the SDKs call), the dev token and
 * key pair, and no key rotation. Everything else (KV port, log level, timings) stays settable.
 */
export function devOverrides(input: DevInput = {}): ConfigOverrides {
  const base = loadConfig({}, input.env ?? process.env, input.flags ?? {});
  return {
    host: LOOPBACK,
    adminHost: LOOPBACK,
    queuePort: base.qstashDevPort,
    dataDir: input.dataDir ?? DEV_DATA_DIR,
    queueToken: DEV_CREDENTIALS.token,
    queueCurrentSigningKey: DEV_CREDENTIALS.currentSigningKey,
    queueNextSigningKey: DEV_CREDENTIALS.nextSigningKey,
    queueKeyRotation: false,
  };
}

/**
 * `--fresh`: empties the stores stashd manages in this data dir (the queue's redis-server files
 * and every managed KV database's), as the vendor dev server starts empty on every run. Tokens
 * and the database list are kept, so the printed .env lines stay valid; an external Redis
 * (STASHD_QUEUE_REDIS_URL, `db create --redis-url`) is never touched. Call with the data dir
 * locked and before anything is started on it.
 */
export function emptyManagedStores(config: Pick<Config, "dataDir" | "queueRedisUrl">): void {
  if (config.queueRedisUrl === undefined) {
    rmSync(managedQueueDir(config.dataDir), { recursive: true, force: true });
  }
  for (const record of readRegistry(config.dataDir)) {
    if (record.redisUrl === undefined) {
      rmSync(managedDir(config.dataDir, record.name), { recursive: true, force: true });
    }
  }
}
