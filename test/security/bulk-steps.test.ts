import { monitorEventLoopDelay } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import { transitions } from "../../src/queue/store/transitions.js";
import { eventually } from "../harness/eventually.js";
import { testPool } from "../harness/redis.js";
import { startStashd } from "../harness/stashd.js";
import { FAST_QUEUE, partitionsAt, queueEnv, type QueueTestEnv } from "../queue/setup.js";

/**
 * Requests that remove many things at once do it in bounded steps (docs/reliability.md, threat
 * model): deleting a FIFO queue cancels its waiting messages 200 per script (200,000 of them held
 * Redis for 11 s in one script before), a `DELETE /v2/messages` naming ids cancels them 200 per
 * script (30,000 ids: 1.5 s), and a `DELETE /v2/dlq` naming ids deletes them without reading
 * every entry at once (30,000 ids held the event loop 1 s and took 80 MB). Redis's slow log shows
 * every command that ran longer than SLOW_US; none may while these run.
 */
const SLOW_US = 100_000;
const HOLD_MS = 250;
const MANY = 8_000;

let env: QueueTestEnv;
let pool: RedisPool;
let dead = "";

beforeAll(async () => {
  env = await queueEnv();
  pool = testPool(env.redis.url, 1);
  await pool.exec(["CONFIG", "SET", "slowlog-log-slower-than", String(SLOW_US)]);
  dead = `${(await env.receiver()).url}/never`;
});
afterAll(async () => {
  await pool?.close();
  await env?.close();
});

/** Stores `items` through /v2/batch, 1000 a request; their message ids. */
async function batch(items: object[]): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < items.length; i += 1000) {
    const res = await env.api("/v2/batch", {
      method: "POST",
      body: JSON.stringify(items.slice(i, i + 1000)),
    });
    expect(res.status).toBe(201);
    for (const m of (await res.json()) as { messageId: string }[]) ids.push(m.messageId);
  }
  return ids;
}

/** Runs `work` with Redis's slow log reset; what it returns and the slow commands meanwhile. */
async function slowCommands<T>(work: () => Promise<T>): Promise<{ result: T; slow: number }> {
  await pool.exec(["SLOWLOG", "RESET"]);
  const result = await work();
  const len = await pool.exec(["SLOWLOG", "LEN"]);
  return { result, slow: len.kind === "int" ? Number(len.value) : -1 };
}

const pendingStatus = async (id: string) => (await env.api(`/v2/messages/${id}`)).status;

describe("bulk removals go in bounded steps", () => {
  it("deletes a queue of many waiting messages in short scripts, cancelling every one", async () => {
    const make = { method: "POST", body: JSON.stringify({ queueName: "big", parallelism: 1 }) };
    expect((await env.api("/v2/queues", make)).status).toBe(200);
    expect((await env.api("/v2/queues/big/pause", { method: "POST" })).status).toBe(200);
    const items = Array.from({ length: MANY }, (_, i) => ({
      destination: dead,
      queue: "big",
      body: String(i),
    }));
    const ids = await batch(items);
    const { result, slow } = await slowCommands(() =>
      env.api("/v2/queues/big", { method: "DELETE" }),
    );
    expect(result.status).toBe(200);
    expect(slow).toBe(0);
    expect((await env.api("/v2/queues/big")).status).toBe(404);
    for (const id of [ids[0], ids[MANY / 2], ids[MANY - 1]]) {
      expect(await pendingStatus(id ?? "")).toBe(404);
    }
    // Nothing of the queue is left pending: a cancel of everything finds nothing.
    const all = await env.api("/v2/messages", { method: "DELETE" });
    expect(await all.json()).toEqual({ cancelled: 0 });
  }, 60_000);

  it("finishes at start a queue deletion a stopped process left half done", async () => {
    const make = { method: "POST", body: JSON.stringify({ queueName: "half", parallelism: 1 }) };
    expect((await env.api("/v2/queues", make)).status).toBe(200);
    expect((await env.api("/v2/queues/half/pause", { method: "POST" })).status).toBe(200);
    const items = Array.from({ length: 500 }, (_, i) => ({
      destination: dead,
      queue: "half",
      body: String(i),
    }));
    const ids = await batch(items);
    // What a process stopped right after the deletion's first script leaves behind.
    const p = (await partitionsAt(pool)).ofName("half");
    const K = p.keys;
    const keys = [K.queue("half"), K.queues, K.queueWait("half"), K.pending, K.log];
    const first = await transitions.queueDelete.run(
      p.redis,
      [...keys, K.queueDrain("half:stopped"), K.queueDrains],
      [K.prefix, String(Date.now()), "0", "half", "100"],
    );
    expect(first).toBe(400);
    expect((await env.api("/v2/queues/half")).status).toBe(404);
    expect(await pendingStatus(ids[499] ?? "")).toBe(200);
    const next = await startStashd({
      queueRedisUrl: env.redis.url,
      services: ["queue"],
      ...FAST_QUEUE,
    });
    try {
      await eventually(async () => expect(await pendingStatus(ids[499] ?? "")).toBe(404));
    } finally {
      await next.stop();
    }
    const drains = await pool.exec(["SCARD", K.queueDrains]);
    expect(drains).toMatchObject({ kind: "int", value: "0" });
  }, 60_000);

  it("cancels many named messages in short scripts", async () => {
    const items = Array.from({ length: MANY }, (_, i) => ({
      destination: dead,
      body: String(i),
      headers: { "Upstash-Delay": "1h" },
    }));
    const ids = await batch(items);
    const { result, slow } = await slowCommands(async () => {
      const res = await env.api("/v2/messages", {
        method: "DELETE",
        body: JSON.stringify({ messageIds: ids }),
      });
      return { status: res.status, body: (await res.json()) as unknown };
    });
    expect(result).toEqual({ status: 200, body: { cancelled: MANY } });
    expect(slow).toBe(0);
    expect(await pendingStatus(ids[MANY - 1] ?? "")).toBe(404);
  }, 60_000);

  it("deletes many named DLQ ids without holding the event loop", async () => {
    const ids = Array.from({ length: 30_000 }, (_, i) => `dlq_${"x".repeat(20)}${i}`);
    const monitor = monitorEventLoopDelay({ resolution: 5 });
    monitor.enable();
    const res = await env.api("/v2/dlq", {
      method: "DELETE",
      body: JSON.stringify({ dlqIds: ids }),
    });
    const body = (await res.json()) as unknown;
    monitor.disable();
    expect(res.status).toBe(200);
    expect(body).toEqual({ deleted: 0 });
    expect(monitor.max / 1e6).toBeLessThan(HOLD_MS);
  }, 60_000);
});
