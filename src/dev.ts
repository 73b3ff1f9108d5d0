import { rmSync } from "node:fs";
import { loadConfig, type ConfigOverrides, type FlagValues } from "./config/load.js";
import type { Config } from "./config/schema.js";
import { managedDir, readRegistry } from "./kv/databases/registry.js";
import { queueCredentialsFile } from "./queue/credentials.js";
import { AppError } from "./shared/errors.js";
import { managedQueueDir } from "./queue/service.js";
import { readJsonFile, withFileLock, writeJsonFile } from "./shared/files.js";

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
  if (base.queueRedisUrl !== undefined) {
    // The dev key pair is written over the keys stored in the queue's Redis: on a shared one,
    // every process using it would sign with public keys from then on.
    throw new AppError(
      "invalid_config",
      "stashd dev keeps its queue in its own managed Redis, and STASHD_QUEUE_REDIS_URL is set: " +
        "unset it for `stashd dev` (an external queue Redis would get the public dev signing keys)",
    );
  }
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
 * Writes the dev credentials into a data dir that has no queue credentials yet, so `stashd
 * credentials --data-dir .stashd-dev` prints what `stashd dev` serves. Refuses (409) a data dir
 * holding other queue credentials: one that `stashd start` used.
 */
export function seedDevCredentials(dataDir: string): void {
  const file = queueCredentialsFile(dataDir);
  withFileLock(file, () => {
    const stored = readJsonFile(file) as { token?: unknown } | undefined;
    if (stored === undefined) writeJsonFile(file, { ...DEV_CREDENTIALS });
    else if (stored.token !== DEV_CREDENTIALS.token) throw notDevDir(dataDir);
  });
}

/**
 * A data dir with other queue credentials belongs to `stashd start`: `stashd dev` on it would
 * write the public dev keys into its queue Redis, and the next `stashd start` would sign with them.
 */
function notDevDir(dataDir: string): AppError {
  return new AppError(
    "conflict",
    `${dataDir} holds the queue credentials of a \`stashd start\` deployment: stashd dev would ` +
      `replace its signing keys with the public dev keys. Use another --data-dir (default ${DEV_DATA_DIR}).`,
  );
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
