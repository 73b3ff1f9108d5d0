import { rmSync } from "node:fs";
import { Client } from "@upstash/qstash";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { QueueService } from "../../src/queue/service.js";
import { eventually } from "../harness/eventually.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { startClockedQueue, TEST_KEYS as KEYS, TEST_TOKEN as TOKEN, TestClock } from "./setup.js";
import { startTracker, type Tracker } from "./tracker.js";

/**
 * FIFO queues and flow-control keys with two queue services ("processes") on one Redis: the
 * parallelism limits hold across them (slots are admitted by Lua scripts, not in process memory), and a schedule with
 * `Upstash-Queue-Name` puts its messages into that queue (a shared test clock makes the cron
 * minute pass at once).
 */
const MIN = 60_000;

let redis: TestRedis;
const clock = new TestClock(Date.UTC(2026, 0, 1, 0, 0, 30));
const dirs: string[] = [];
const trackers: Tracker[] = [];
let a: QueueService;
let b: QueueService;
let ca: Client;
let cb: Client;

function startQueue(): Promise<QueueService> {
  return startClockedQueue(redis.url, clock, dirs);
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

describe("flow control across two processes", () => {
  it("keeps a key's parallelism with both processes publishing and delivering", async () => {
    const rx = await tracker();
    rx.delayMs = 30;
    const n = 16;
    const flowControl = { key: "shared-key", parallelism: 2 };
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        (i % 2 === 0 ? ca : cb).publish({ url: `${rx.url}/f`, body: String(i), flowControl }),
      ),
    );
    await eventually(() => expect(rx.answered).toHaveLength(n), { timeoutMs: 15_000 });
    expect(rx.maxInflight).toBe(2);
    expect(rx.badSignatures).toBe(0);
    expect(new Set(rx.answered.map((x) => x.body)).size).toBe(n);
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
