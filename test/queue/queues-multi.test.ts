import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@upstash/qstash";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.js";
import type { Clock } from "../../src/queue/scheduler/scheduler.js";
import { startQueueService, type QueueService } from "../../src/queue/service.js";
import { createLogger } from "../../src/shared/log.js";
import { eventually } from "../harness/eventually.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { FAST_QUEUE } from "./setup.js";
import { startTracker, type Tracker } from "./tracker.js";

/**
 * FIFO queues with two queue services ("processes") on one Redis: the parallelism limit holds
 * across them (slots are admitted by Lua scripts, not in process memory), and a schedule with
 * `Upstash-Queue-Name` puts its messages into that queue (a shared test clock makes the cron
 * minute pass at once).
 */
const TOKEN = "dG9rZW4=";
const KEYS = { current: "sig_current", next: "sig_next" };
const MIN = 60_000;

class TestClock implements Clock {
  t = Date.UTC(2026, 0, 1, 0, 0, 30);
  now(): number {
    return this.t;
  }
}

let redis: TestRedis;
const clock = new TestClock();
const dirs: string[] = [];
const trackers: Tracker[] = [];
let a: QueueService;
let b: QueueService;
let ca: Client;
let cb: Client;

async function startQueue(): Promise<QueueService> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-queues-"));
  dirs.push(dataDir);
  const config = loadConfig(
    {
      dataDir,
      host: "127.0.0.1",
      queuePort: 0,
      queueRedisUrl: redis.url,
      queueToken: TOKEN,
      queueCurrentSigningKey: KEYS.current,
      queueNextSigningKey: KEYS.next,
      shutdownGraceMs: 1000,
      queueSchedulePollMs: 10,
      ...FAST_QUEUE,
    },
    {},
  );
  return startQueueService(config, createLogger("warn"), { clock });
}

async function tracker(): Promise<Tracker> {
  const t = await startTracker(KEYS);
  trackers.push(t);
  return t;
}

beforeAll(async () => {
  redis = await startRedis();
  a = await startQueue();
  b = await startQueue();
  ca = new Client({ baseUrl: a.url, token: TOKEN });
  cb = new Client({ baseUrl: b.url, token: TOKEN });
});
afterAll(async () => {
  await Promise.all(trackers.map((t) => t.close()));
  await a?.close();
  await b?.close();
  await redis?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("queues across two processes", () => {
  it("keeps the parallelism limit with both processes enqueueing and delivering", async () => {
    const rx = await tracker();
    rx.delayMs = 30;
    await ca.queue({ queueName: "shared-q" }).upsert({ parallelism: 2 });
    const n = 24;
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        (i % 2 === 0 ? ca : cb)
          .queue({ queueName: "shared-q" })
          .enqueue({ url: `${rx.url}/m`, body: String(i) }),
      ),
    );
    await eventually(() => expect(rx.answered).toHaveLength(n), { timeoutMs: 15_000 });
    expect(rx.maxInflight).toBe(2);
    expect(rx.badSignatures).toBe(0);
    expect(new Set(rx.answered.map((x) => x.body)).size).toBe(n);
    await eventually(async () => {
      expect(await cb.queue({ queueName: "shared-q" }).get()).toMatchObject({ lag: 0 });
    });
  });

  it("resumes a queue paused through the other process", async () => {
    const rx = await tracker();
    await ca.queue({ queueName: "pr-q" }).upsert({ paused: true });
    await cb.queue({ queueName: "pr-q" }).enqueue({ url: `${rx.url}/p`, body: "p" });
    expect(await ca.queue({ queueName: "pr-q" }).get()).toMatchObject({ paused: true, lag: 1 });
    await ca.queue({ queueName: "pr-q" }).resume();
    await eventually(() => expect(rx.answered.map((x) => x.body)).toEqual(["p"]));
  });
});

describe("schedules into a queue", () => {
  it("enqueues each tick's message into the schedule's queue", async () => {
    const rx = await tracker();
    const q = ca.queue({ queueName: "cron-q" });
    await q.upsert({ paused: true });
    const { scheduleId } = await ca.schedules.create({
      destination: `${rx.url}/tick`,
      cron: "* * * * *",
      body: "tick",
      queueName: "cron-q",
    });
    expect(await cb.schedules.get(scheduleId)).toMatchObject({ queueName: "cron-q" });
    clock.t = Math.floor(clock.t / MIN) * MIN + MIN + 100;
    // Paused queue: the fired message waits in it.
    await eventually(async () => expect(await q.get()).toMatchObject({ lag: 1 }));
    expect(rx.answered).toHaveLength(0);
    await q.resume();
    await eventually(() => expect(rx.answered.map((x) => x.body)).toEqual(["tick"]));
    const logs = await ca.logs({ filter: { scheduleId } });
    // The SDK's Log type has no queueName; the wire object does (spec 7.4).
    const names = logs.logs.map((l) => (l as { queueName?: string }).queueName);
    expect(names.length).toBeGreaterThan(0);
    expect(new Set(names)).toEqual(new Set(["cron-q"]));
    await ca.schedules.delete(scheduleId);
  });

  it("refuses an invalid Upstash-Queue-Name", async () => {
    const res = await fetch(`${a.url}/v2/schedules/https://example.com/x`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${TOKEN}`,
        "upstash-cron": "* * * * *",
        "upstash-queue-name": "bad name",
      },
    });
    expect(res.status).toBe(400);
  });
});
