import { randomBytes } from "node:crypto";
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll } from "vitest";
import { freePort, startRedis, type TestRedis } from "../harness/redis.js";
import { startTestCluster } from "../harness/cluster.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import type { StartOptions } from "../../src/index.js";

/**
 * One real redis-server, one in-process stashd and the official SDK pointed at it, as an
 * application would configure it. `key()` prefixes names with a per-file random prefix.
 */
export interface Compat {
  redis: Pick<TestRedis, "url" | "stop">;
  stashd: TestStashd;
  /** SDK defaults: base64 responses, auto-pipelining on, read-your-writes on. */
  sdk: Redis;
  /** Same, with auto-pipelining off: one HTTP request per command at `/`. */
  direct: Redis;
  key(name: string): string;
  stop(): Promise<void>;
}

/**
 * Set by test/cluster/compat-*.test.ts before importing a suite: run it on a Redis Cluster, with
 * every key under one hash tag (docs/scaling.md, Redis Cluster: multi-key commands need one slot).
 */
export const compatBackend = { cluster: false, hashTag: true };

export async function startCompat(options: StartOptions = {}): Promise<Compat> {
  // Always a private redis-server (a fixed port bypasses REDIS_URL): these files assert on
  // server-wide state (FLUSHALL, FUNCTION FLUSH, SCRIPT FLUSH, PUBSUB NUMPAT, DBSIZE).
  const redis = compatBackend.cluster
    ? await startTestCluster()
    : await startRedis([], await freePort());
  // The SDK suites use the KV gateway only: no queue Redis, listener or admin listener.
  const stashd = await startStashd({ kvRedisUrl: redis.url, services: ["kv"], ...options });
  const id = randomBytes(4).toString("hex");
  const prefix =
    compatBackend.cluster && compatBackend.hashTag ? `{compat:${id}}:` : `compat:${id}:`;
  const { url, token } = stashd.kv;
  return {
    redis,
    stashd,
    sdk: new Redis({ url, token }),
    direct: new Redis({ url, token, enableAutoPipelining: false }),
    key: (name) => prefix + name,
    stop: async () => {
      await stashd.stop();
      await redis.stop();
    },
  };
}

/** Starts a Compat for the current test file (beforeAll) and stops it afterwards (afterAll). */
export function useCompat(onReady: (c: Compat) => void): void {
  let compat: Compat | undefined;
  beforeAll(async () => {
    compat = await startCompat();
    onReady(compat);
  });
  afterAll(async () => {
    await compat?.stop();
  });
}
