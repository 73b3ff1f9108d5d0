import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { start, type StartOptions, type Stashd } from "../../src/index.js";
import { startRedis, type TestRedis } from "./redis.js";

/**
 * stashd started in-process on a temporary data dir and free ports, with test-speed timings.
 * `stop()` shuts it down and removes the data dir.
 */
export interface TestStashd extends Stashd {
  dataDir: string;
  /** POSTs a JSON body (or raw string) to the KV gateway with the standard token. */
  kvFetch(pathname: string, init?: RequestInit & { token?: string | null }): Promise<Response>;
  /** Stops stashd but keeps the data dir, to start again on it. */
  stopKeepingData(): Promise<void>;
}

/**
 * The queue partition count test stashds get unless a test sets one: the vitest projects
 * "everyday-partitioned" and "slow-partitioned" (vitest.config.ts) run the queue and workflow
 * tests again with 3, on the same single Redis, so every queue feature is also tested split over
 * partitions.
 */
const TEST_PARTITIONS = Number(process.env.STASHD_TEST_QUEUE_PARTITIONS ?? 0) || 0;

export async function startStashd(options: StartOptions = {}): Promise<TestStashd> {
  const dataDir = options.dataDir ?? mkdtempSync(path.join(os.tmpdir(), "stashd-test-"));
  const stashd = await start({
    kvPort: 0,
    queuePort: 0,
    adminPort: 0,
    host: "127.0.0.1",
    logLevel: "warn",
    registryPollMs: 20,
    redisRetryBackoffMs: 20,
    shutdownGraceMs: 1000,
    queuePartitions: TEST_PARTITIONS,
    // Test Redis servers run without persistence (harness/redis.ts): the opt-in for such a
    // Redis. test/security/unsafe-queue-redis.test.ts turns it off.
    queueAllowUnsafeRedis: true,
    env: {},
    ...options,
    dataDir,
  });
  return {
    ...stashd,
    dataDir,
    kvFetch: (pathname, init = {}) => {
      const { token = stashd.kv.token, headers, ...rest } = init;
      const h = new Headers(headers);
      if (token !== null && !h.has("authorization")) h.set("authorization", `Bearer ${token}`);
      return fetch(`${stashd.kv.url}${pathname}`, { method: "POST", ...rest, headers: h });
    },
    stopKeepingData: () => stashd.stop(),
    stop: async () => {
      await stashd.stop();
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A test Redis holding both services, KV in database 0 and the queue in database 1 (one number
 * for both is refused: docs/reliability.md, threat model), and a stashd on it.
 */
export async function startOnOneRedis(
  options: StartOptions = {},
): Promise<{ redis: TestRedis; stashd: TestStashd }> {
  const redis = await startRedis();
  try {
    const stashd = await startStashd({
      kvRedisUrl: `${redis.url}/0`,
      queueRedisUrl: `${redis.url}/1`,
      ...options,
    });
    return { redis, stashd };
  } catch (err) {
    await redis.stop();
    throw err;
  }
}
