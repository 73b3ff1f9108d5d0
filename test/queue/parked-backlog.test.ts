import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readPendingNow } from "../../src/admin/console/pending.js";
import { eventually } from "../harness/eventually.js";
import { testPool } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { metric } from "../ops/helpers.js";
import { listenLocal } from "./receiver.js";
import { partitionsAt, queueEnv, sharedQueueOptions, type QueueTestEnv } from "./setup.js";

/**
 * A destination that holds every attempt (accepts, never answers) with more messages due than a
 * claim looks at (1,024) must not hide the messages behind them: a claim that looked that deep
 * parks the backlog it skipped (lua/includes/parking.lua), and moves it back as slots free.
 */

/** A destination that answers nothing until `release()`, then everything at once. */
async function deadDestination() {
  const held: http.ServerResponse[] = [];
  const ids = new Set<string>();
  let released = false;
  const server = http.createServer((req, res) => {
    ids.add(String(req.headers["upstash-message-id"]));
    req.resume();
    req.on("end", () => (released ? res.end("ok") : held.push(res)));
  });
  const listening = await listenLocal(server);
  return {
    url: listening.url,
    ids,
    held: () => held.length,
    release: () => {
      released = true;
      for (const res of held.splice(0)) res.end("ok");
    },
    close: listening.close,
  };
}

const BACKLOG = 1_300;
/**
 * 20 slots, a destination's share 10, one partition: the backlog must lie in one due set to pass
 * a claim's depth, and with partitions a claim may give a destination up to partitions - 1 more
 * than its share (docs/queue.md), which the exact counts below do not allow for.
 */
const ONE_PARTITION_OF_20 = { queueConcurrency: 20, queueDestinationShare: 50, queuePartitions: 1 };

describe("a dead destination's backlog beyond a claim's depth", () => {
  let env: QueueTestEnv;
  let dead: Awaited<ReturnType<typeof deadDestination>>;

  beforeAll(async () => {
    // 20 slots, a destination's share 10: the dead one holds 10 and leaves the rest due.
    env = await queueEnv({ ...ONE_PARTITION_OF_20 });
    dead = await deadDestination();
  });
  afterAll(async () => {
    await env?.close();
    await dead?.close();
  });

  const publishDead = async (from: number, count: number) => {
    const batch = Array.from({ length: count }, (_, i) => ({
      destination: `${dead.url}/${from + i}`,
      body: String(from + i),
    }));
    const res = await env.api("/v2/batch", { method: "POST", body: JSON.stringify(batch) });
    expect(res.status).toBe(201);
    return (await res.json()) as { messageId: string }[];
  };

  it("lets a delayed message to another destination through, counts, cancels, then drains it", async () => {
    const ids: string[] = [];
    for (let from = 0; from < BACKLOG; from += 100) {
      ids.push(...(await publishDead(from, 100)).map((m) => m.messageId));
    }
    await eventually(() => expect(dead.held()).toBe(10));
    const good = await env.receiver();
    await env.client.publish({ url: `${good.url}/late`, body: "late", delay: 1 });
    // Retries go through the due set too: one answered 500 first, retried after its back-off.
    good.status = 500;
    await env.client.publish({ url: `${good.url}/retried`, body: "again", retries: 2 });
    await eventually(() =>
      expect(good.requests.map((r) => r.url)).toContain(`${good.url}/retried`),
    );
    good.status = 200;
    await eventually(
      () => {
        const urls = good.requests.map((r) => r.url);
        expect(urls).toContain(`${good.url}/late`);
        expect(urls.filter((u) => u.endsWith("/retried"))).toHaveLength(2);
      },
      { timeoutMs: 10_000 },
    );
    expect(dead.held()).toBe(10);

    // Parked messages are still counted as ready, and can be cancelled.
    const admin = env.stashd.admin?.url ?? "";
    const ready = () => metric(admin, "stashd_queue_messages", { state: "ready" });
    expect(await ready()).toBe(BACKLOG - 10);
    // The console's "pending now" finds them ready too, not in some other state.
    const pool = testPool(env.redis.url);
    const pending = await readPendingNow(await partitionsAt(pool), { state: "ready" });
    await pool.close();
    expect(pending.counts).toMatchObject({ ready: BACKLOG - 10, inFlight: 10, other: 0 });
    const cancelled = ids.slice(-5);
    for (const id of cancelled) {
      expect((await env.api(`/v2/messages/${id}`, { method: "DELETE" })).status).toBe(200);
    }
    expect(await ready()).toBe(BACKLOG - 15);

    // The destination answers again: every message left is delivered once, none cancelled.
    dead.release();
    await eventually(() => expect(dead.ids.size).toBe(BACKLOG - 5), { timeoutMs: 20_000 });
    for (const id of cancelled) expect(dead.ids.has(id)).toBe(false);
    await eventually(async () => expect(await ready()).toBe(0));
  });
});

describe("a backlog parked by one process", () => {
  let env: QueueTestEnv;
  let second: TestStashd | undefined;
  let dead: Awaited<ReturnType<typeof deadDestination>>;

  beforeAll(async () => {
    const shared = ONE_PARTITION_OF_20;
    const { queueToken, queueCurrentSigningKey, queueNextSigningKey } = sharedQueueOptions("");
    const same = { queueToken, queueCurrentSigningKey, queueNextSigningKey };
    env = await queueEnv({ ...same, ...shared });
    dead = await deadDestination();
  });
  afterAll(async () => {
    await second?.stop();
    await env?.close();
    await dead?.close();
  });

  it("is taken by another process with free slots for that destination", async () => {
    const batch = Array.from({ length: BACKLOG }, (_, i) => ({
      destination: `${dead.url}/${i}`,
      body: String(i),
    }));
    for (let from = 0; from < BACKLOG; from += 100) {
      const part = JSON.stringify(batch.slice(from, from + 100));
      expect((await env.api("/v2/batch", { method: "POST", body: part })).status).toBe(201);
    }
    await eventually(() => expect(dead.held()).toBe(10));
    // The first process parks what it cannot send; the second has its own share of 10 slots.
    second = await startStashd({
      ...sharedQueueOptions(env.redis.url),
      services: ["queue"],
      ...ONE_PARTITION_OF_20,
    });
    await eventually(() => expect(dead.held()).toBe(20));
    dead.release();
    await eventually(() => expect(dead.ids.size).toBe(BACKLOG), { timeoutMs: 20_000 });
  });
});

describe("parking in each of three partitions", () => {
  let env: QueueTestEnv;
  let dead: Awaited<ReturnType<typeof deadDestination>>;

  beforeAll(async () => {
    env = await queueEnv({ ...ONE_PARTITION_OF_20, queuePartitions: 3 });
    dead = await deadDestination();
  });
  afterAll(async () => {
    await env?.close();
    await dead?.close();
  });

  it("lets a delayed message through a backlog deeper than a claim in every partition", async () => {
    // 4,000 over 3 partitions: more than a claim's 1,024 due in each.
    const total = 4_000;
    for (let from = 0; from < total; from += 500) {
      const batch = Array.from({ length: 500 }, (_, i) => ({
        destination: `${dead.url}/${from + i}`,
      }));
      const res = await env.api("/v2/batch", { method: "POST", body: JSON.stringify(batch) });
      expect(res.status).toBe(201);
    }
    // Partitions may give a destination up to partitions - 1 more than its share of 10.
    await eventually(() => expect(dead.held()).toBeGreaterThanOrEqual(10));
    const good = await env.receiver();
    await env.client.publish({ url: `${good.url}/late`, body: "late", delay: 1 });
    await eventually(() => expect(good.requests).toHaveLength(1), { timeoutMs: 10_000 });
    expect(dead.held()).toBeLessThanOrEqual(12);
    dead.release();
    await eventually(() => expect(dead.ids.size).toBe(total), { timeoutMs: 15_000 });
  });
});
