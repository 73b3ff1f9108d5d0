import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessageStore } from "../../src/queue/store/message-store.js";
import { parseRedisUrl } from "../../src/shared/redis/connection.js";
import { RedisPool } from "../../src/shared/redis/pool.js";
import { eventually } from "../harness/eventually.js";
import { queueEnv, startClockedQueue, TestClock, type QueueTestEnv } from "../queue/setup.js";
import { counter, metric } from "./helpers.js";
import { singlePartition } from "../../src/queue/store/partitions.js";

/** Each queue metric moves when its event happens (scrape-time gauges read the queue Redis). */
let env: QueueTestEnv;
let admin: string;

beforeAll(async () => {
  env = await queueEnv();
  admin = env.stashd.admin?.url ?? "";
});
afterAll(async () => {
  await env.close();
});

const gauge = async (name: string, labels: Record<string, string> = {}): Promise<number> =>
  (await metric(admin, name, labels)) ?? 0;

describe("queue metrics", () => {
  it("counts deliveries by outcome, retries and the DLQ size", async () => {
    const rx = await env.receiver();
    const delivered = await counter(admin, "stashd_queue_deliveries_total", {
      outcome: "delivered",
    });
    await env.client.publish({ url: `${rx.url}/ok`, body: "a" });
    await eventually(async () =>
      expect(await counter(admin, "stashd_queue_deliveries_total", { outcome: "delivered" })).toBe(
        delivered + 1,
      ),
    );
    rx.status = 500;
    const retries = await counter(admin, "stashd_queue_retries_total");
    const dlq = await gauge("stashd_queue_dlq_messages");
    await env.client.publish({ url: `${rx.url}/bad`, body: "b", retries: 1 });
    await eventually(async () => expect(await gauge("stashd_queue_dlq_messages")).toBe(dlq + 1));
    expect(await counter(admin, "stashd_queue_retries_total")).toBe(retries + 1);
    expect(
      await counter(admin, "stashd_queue_deliveries_total", { outcome: "retry" }),
    ).toBeGreaterThan(0);
    expect(
      await counter(admin, "stashd_queue_deliveries_total", { outcome: "failed" }),
    ).toBeGreaterThan(0);
  });

  it("reads ready, delayed and in-flight depth from Redis at scrape time", async () => {
    const rx = await env.receiver();
    rx.delayMs = 1_000;
    const delayed = await gauge("stashd_queue_messages", { state: "delayed" });
    const { messageId } = await env.client.publish({
      url: `${rx.url}/later`,
      body: "d",
      delay: 3600,
    });
    expect(await gauge("stashd_queue_messages", { state: "delayed" })).toBe(delayed + 1);
    await env.client.messages.delete(messageId);
    await env.client.publish({ url: `${rx.url}/slow`, body: "s" });
    await eventually(async () =>
      expect(await gauge("stashd_queue_messages", { state: "in_flight" })).toBeGreaterThanOrEqual(
        1,
      ),
    );
    await eventually(async () =>
      expect(await gauge("stashd_queue_messages", { state: "in_flight" })).toBe(0),
    );
    expect(await gauge("stashd_queue_messages", { state: "ready" })).toBe(0);
  });

  it("reports per FIFO queue depth and flow-control waits", async () => {
    const rx = await env.receiver();
    rx.delayMs = 800;
    const q = env.client.queue({ queueName: "depth-q" });
    await q.enqueue({ url: `${rx.url}/q1`, body: "1" });
    await q.enqueue({ url: `${rx.url}/q2`, body: "2" });
    await eventually(async () => {
      expect(
        await gauge("stashd_queue_fifo_messages", { queue: "depth-q", state: "in_flight" }),
      ).toBe(1);
      expect(
        await gauge("stashd_queue_fifo_messages", { queue: "depth-q", state: "waiting" }),
      ).toBe(1);
    });
    const flowControl = { key: "metrics-fc", parallelism: 1 };
    await env.client.publish({ url: `${rx.url}/f1`, body: "1", flowControl });
    await env.client.publish({ url: `${rx.url}/f2`, body: "2", flowControl });
    await eventually(async () => expect(await gauge("stashd_queue_flow_control_waiting")).toBe(1));
    await eventually(async () => expect(await gauge("stashd_queue_flow_control_waiting")).toBe(0), {
      timeoutMs: 10_000,
    });
  });

  it("counts lease reaps", async () => {
    const rx = await env.receiver();
    const before = await counter(admin, "stashd_queue_lease_reaps_total");
    await env.client.publish({ url: `${rx.url}/reaped`, body: "r", delay: 3600 });
    // A "process" that claims the message and dies: its 1 ms lease expires at once.
    const pool = new RedisPool(parseRedisUrl(env.redis.url), {
      size: 1,
      connectTimeoutMs: 1000,
      retryBackoffMs: 20,
    });
    try {
      const { claimed } = await new MessageStore(singlePartition(pool), 60_000).claim(
        Date.now() + 7_200_000,
        10,
        1,
      );
      expect(claimed.map((c) => c.body.toString())).toContain("r");
    } finally {
      await pool.close();
    }
    await eventually(async () =>
      expect(await counter(admin, "stashd_queue_lease_reaps_total")).toBeGreaterThan(before),
    );
    await eventually(() => expect(rx.requests.map((r) => r.body)).toEqual(["r"]));
  });

  it("counts schedule ticks and their lateness", async () => {
    const dirs: string[] = [];
    const clock = new TestClock(Date.now());
    const other = await startClockedQueue(env.redis.url, clock, dirs);
    try {
      const rx = await env.receiver();
      const ticks = await counter(admin, "stashd_queue_schedule_ticks_total");
      const observed = await counter(admin, "stashd_queue_schedule_lateness_seconds_count");
      const { scheduleId } = await env.client.schedules.create({
        destination: `${rx.url}/tick`,
        cron: "* * * * *",
      });
      clock.t = Math.floor(clock.t / 60_000) * 60_000 + 60_000 + 2_500;
      await eventually(async () =>
        expect(await counter(admin, "stashd_queue_schedule_ticks_total")).toBeGreaterThan(ticks),
      );
      expect(await counter(admin, "stashd_queue_schedule_lateness_seconds_count")).toBeGreaterThan(
        observed,
      );
      expect(
        await counter(admin, "stashd_queue_schedule_lateness_seconds_bucket", { le: "5" }),
      ).toBeGreaterThan(0);
      await env.client.schedules.delete(scheduleId);
    } finally {
      await other.close();
    }
  });

  it("counts queue API requests by route pattern, never by URL", async () => {
    await env.api("/v2/messages/msg_does-not-exist");
    const text = await (await fetch(`${admin}/metrics`)).text();
    expect(text).toContain('route="GET messages *"');
    expect(text).not.toContain("msg_does-not-exist");
  });
});
