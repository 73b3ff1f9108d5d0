import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@upstash/qstash";
import { loadConfig } from "../../src/config/load.js";
import type { Clock } from "../../src/queue/scheduler/scheduler.js";
import { startQueueService, type QueueService } from "../../src/queue/service.js";
import { createLogger, type Logger } from "../../src/shared/log.js";
import type { StartOptions } from "../../src/index.js";
import { queueKeys } from "../../src/queue/store/keys.js";
import { makePartitions, type Partitions } from "../../src/queue/store/partitions.js";
import type { QueueRedis } from "../../src/queue/store/redis.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { eventually } from "../harness/eventually.js";
import { startReceiver, type Received, type TestReceiver } from "./receiver.js";

/** Millisecond time settings so retries, leases and polling run fast in tests. */
export const FAST_QUEUE = {
  queueBackoffScaleMs: 1,
  queueIdlePollMs: 50,
  queueReapMs: 50,
  queueLeaseMs: 2_000,
} as const;

export interface QueueTestEnv {
  redis: TestRedis;
  stashd: TestStashd;
  client: Client;
  /** Keys receivers verify with; `refreshKeys` updates them after a rotation. */
  keys: { current: string; next: string };
  /** A fresh receiver verifying signatures with the keys the server reports now. */
  receiver(): Promise<TestReceiver>;
  /** Raw fetch against the queue API with the token. */
  api(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

/**
 * A redis-server and a stashd running the queue on it (with the admin listener, but no KV
 * gateway unless `options.services` asks for it), a QStash client, and signature-checking
 * receivers; `close()` stops them all.
 */
export async function queueEnv(options: StartOptions = {}): Promise<QueueTestEnv> {
  const redis = await startRedis();
  const stashd = await startStashd({
    queueRedisUrl: redis.url,
    services: ["queue"],
    ...FAST_QUEUE,
    ...options,
  });
  const receivers: TestReceiver[] = [];
  const keys = { current: stashd.queue.currentSigningKey, next: stashd.queue.nextSigningKey };
  const api = (path: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${stashd.queue.token}`);
    return fetch(`${stashd.queue.url}${path}`, { ...init, headers });
  };
  return {
    redis,
    stashd,
    keys,
    client: new Client({ baseUrl: stashd.queue.url, token: stashd.queue.token }),
    api,
    receiver: async () => {
      const r = await startReceiver(() => keys);
      receivers.push(r);
      return r;
    },
    close: async () => {
      await Promise.all(receivers.map((r) => r.close()));
      await stashd.stop();
      await redis.stop();
    },
  };
}

/** Makes receivers verify with the keys the server reports now (after a rotation). */
export async function refreshKeys(env: QueueTestEnv): Promise<void> {
  const res = await env.api("/v2/keys");
  Object.assign(env.keys, (await res.json()) as { current: string; next: string });
}

/** Waits for the receiver's request number `i` (0-based). */
export function received(rx: TestReceiver, i: number, timeoutMs = 5_000): Promise<Received> {
  return eventually(
    () => {
      const r = rx.requests[i];
      if (!r) throw new Error(`request ${i} not received (have ${rx.requests.length})`);
      return r;
    },
    { timeoutMs },
  );
}

/** Fixed credentials for bare queue services started with `startClockedQueue`. */
export const TEST_TOKEN = "dG9rZW4=";
export const TEST_KEYS = { current: "sig_current", next: "sig_next" };

/** Options of one of several stashd processes sharing the queue Redis at `redisUrl`. */
export function sharedQueueOptions(redisUrl: string) {
  return {
    queueRedisUrl: redisUrl,
    queueToken: TEST_TOKEN,
    queueCurrentSigningKey: TEST_KEYS.current,
    queueNextSigningKey: TEST_KEYS.next,
    ...FAST_QUEUE,
  };
}

/** A clock the schedulers read; tests move `t` forward to make cron ticks due at once. */
export class TestClock implements Clock {
  constructor(public t: number) {}
  now(): number {
    return this.t;
  }
}

/**
 * A bare queue service (one "process") on `redisUrl` with the fixed test credentials, fast
 * timings, a shared test clock and the given config `overrides`. Its data dir is appended to
 * `dirs` for the caller to remove. `log` receives its log lines (default: stderr, warn and up).
 */
export async function startClockedQueue(
  redisUrl: string,
  clock: Clock,
  dirs: string[],
  overrides: StartOptions = {},
  log: Logger = createLogger("warn"),
): Promise<QueueService> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-queue-"));
  dirs.push(dataDir);
  const config = loadConfig(
    {
      dataDir,
      host: "127.0.0.1",
      queuePort: 0,
      queueRedisUrl: redisUrl,
      queueToken: TEST_TOKEN,
      queueCurrentSigningKey: TEST_KEYS.current,
      queueNextSigningKey: TEST_KEYS.next,
      shutdownGraceMs: 1000,
      queueSchedulePollMs: 10,
      queueAllowUnsafeRedis: true, // test Redis servers run without persistence
      ...FAST_QUEUE,
      ...overrides,
    },
    {},
  );
  return startQueueService(config, log, { clock });
}

/**
 * The partitions of the queue whose Redis `redis` is (its stored count; 1 before any stashd used
 * it), each on `redis`: where a test finds a message's or a queue's keys.
 */
export async function partitionsAt(redis: QueueRedis): Promise<Partitions> {
  const reply = await redis.exec(["GET", queueKeys.partitionCount]);
  const count = reply.kind === "bulk" ? Number(reply.value.toString()) : 1;
  return makePartitions(count, () => redis);
}

/** The queue listener's port of a test queue. */
export const queuePort = (env: QueueTestEnv): number => Number(new URL(env.stashd.queue.url).port);
