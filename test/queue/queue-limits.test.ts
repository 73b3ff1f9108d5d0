import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queueEnv, type QueueTestEnv } from "./setup.js";

/**
 * Queue quotas (spec 2.5: 412 when the max queue count or max parallelism is exceeded; spec 2.6:
 * 412 for too many schedules), with STASHD_QUEUE_MAX_QUEUES = 2, STASHD_QUEUE_MAX_PARALLELISM = 5
 * and STASHD_QUEUE_MAX_SCHEDULES = 2.
 */
let env: QueueTestEnv;

beforeAll(async () => {
  env = await queueEnv({ queueMaxQueues: 2, queueMaxParallelism: 5, queueMaxSchedules: 2 });
});
afterAll(async () => {
  await env?.close();
});

describe("queue quotas", () => {
  it("refuses a parallelism above the maximum with 412", async () => {
    const err = await env.client
      .queue({ queueName: "big" })
      .upsert({ parallelism: 6 })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toMatchObject({ status: 412 });
    expect((await env.api("/v2/queues/big")).status).toBe(404);
    await env.client.queue({ queueName: "big" }).upsert({ parallelism: 5 });
  });

  it("refuses one queue too many on upsert, enqueue and batch, creating nothing", async () => {
    await env.client.queue({ queueName: "second" }).upsert({});
    const upsert = await env.api("/v2/queues", {
      method: "POST",
      body: JSON.stringify({ queueName: "third" }),
    });
    expect(upsert.status).toBe(412);
    expect(await upsert.json()).toHaveProperty("error");
    const enqueue = await env.api("/v2/enqueue/third/https://example.com/x", { method: "POST" });
    expect(enqueue.status).toBe(412);
    const batch = await env.api("/v2/batch", {
      method: "POST",
      body: JSON.stringify([{ destination: "https://example.com/y", queue: "third" }]),
    });
    expect(await batch.json()).toEqual([{ error: "max number of queues (2) reached" }]);
    // Existing queues still take messages.
    expect(
      (await env.api("/v2/enqueue/second/https://example.com/z", { method: "POST" })).status,
    ).toBe(201);
    expect((await env.client.queue().list()).map((q) => q.name).sort()).toEqual(["big", "second"]);
    // A deleted queue makes room again.
    await env.client.queue({ queueName: "big" }).delete();
    await env.client.queue({ queueName: "third" }).upsert({});
  });
});

describe("schedule quota", () => {
  const create = (id: string) =>
    env.api(`/v2/schedules/https://example.com/${id}`, {
      method: "POST",
      headers: { "upstash-cron": "0 0 1 1 *", "upstash-schedule-id": id },
    });

  it("refuses one schedule too many with 412, still replaces and creates after a delete", async () => {
    expect((await create("s1")).status).toBe(200);
    expect((await create("s2")).status).toBe(200);
    const third = await create("s3");
    expect(third.status).toBe(412);
    expect(await third.json()).toEqual({ error: "max number of schedules (2) reached" });
    expect((await env.api("/v2/schedules/s3")).status).toBe(404);
    // Replacing an existing schedule is not a new one.
    expect((await create("s2")).status).toBe(200);
    expect((await env.api("/v2/schedules/s1", { method: "DELETE" })).status).toBe(200);
    expect((await create("s3")).status).toBe(200);
    const list = (await (await env.api("/v2/schedules")).json()) as { scheduleId: string }[];
    expect(list.map((s) => s.scheduleId).sort()).toEqual(["s2", "s3"]);
  });
});
