import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { listenLocal } from "./receiver.js";
import { queueEnv, received, sharedQueueOptions, TEST_TOKEN, type QueueTestEnv } from "./setup.js";

/**
 * Issue 11: one unresponsive destination must not block every delivery, and cancelling must
 * abort in-flight attempts and free their slots (also when another process holds them). The
 * dead receiver accepts connections and reads requests but never answers.
 */
interface DeadReceiver {
  url: string;
  /** Requests received so far. */
  seen: string[];
  /** Requests whose connection is still open (their attempt not aborted). */
  open(): number;
  close(): Promise<void>;
}

async function deadReceiver(): Promise<DeadReceiver> {
  const seen: string[] = [];
  const pending = new Set<http.IncomingMessage>();
  const server = http.createServer((req) => {
    seen.push(req.url ?? "");
    pending.add(req);
    req.socket.on("close", () => pending.delete(req));
  });
  const listening = await listenLocal(server);
  return { ...listening, seen, open: () => pending.size };
}

async function parallelismCount(api: (p: string) => Promise<Response>): Promise<number> {
  const res = await api("/v2/globalParallelism");
  return ((await res.json()) as { parallelismCount: number }).parallelismCount;
}

async function batchTo(env: QueueTestEnv, urls: string[]): Promise<string[]> {
  const items = urls.map((destination, i) => ({ destination, body: String(i) }));
  const res = await env.api("/v2/batch", { method: "POST", body: JSON.stringify(items) });
  expect(res.status).toBe(201);
  return ((await res.json()) as { messageId: string }[]).map((m) => m.messageId);
}

describe("a dead destination (default concurrency 200, share 50 %)", () => {
  let env: QueueTestEnv;
  let dead: DeadReceiver;

  beforeAll(async () => {
    env = await queueEnv();
    dead = await deadReceiver();
  });
  afterAll(async () => {
    await dead?.close();
    await env?.close();
  });

  it("holds at most its share of the slots while a healthy URL is delivered promptly", async () => {
    const rx = await env.receiver();
    await batchTo(
      env,
      Array.from({ length: 500 }, (_, i) => `${dead.url}/m${i}`),
    );
    await eventually(() => expect(dead.open()).toBeGreaterThanOrEqual(100));
    const start = Date.now();
    await env.client.publish({ url: `${rx.url}/healthy`, body: "h" });
    await received(rx, 0, 3_000);
    const latency = Date.now() - start;
    // A queue message is never handed off at publish: the claim finds it behind the 400 left due.
    const claimedStart = Date.now();
    await env.client.queue({ queueName: "h" }).enqueue({ url: `${rx.url}/queued`, body: "q" });
    await received(rx, 1, 3_000);
    const claimed = Date.now() - claimedStart;
    console.log(
      `[reliability] issue 11: healthy delivery ${latency} ms (handed off), ${claimed} ms (claimed behind 400 due) while 500 hang (100 open)`,
    );
    expect(dead.open()).toBe(100);
    await eventually(async () => expect(await parallelismCount(env.api)).toBe(100));
  });

  it("cancelling aborts the hanging attempts at once and frees their slots", async () => {
    const res = await env.api("/v2/messages", { method: "DELETE" });
    expect(((await res.json()) as { cancelled: number }).cancelled).toBe(500);
    const start = Date.now();
    await eventually(async () => expect(await parallelismCount(env.api)).toBe(0));
    await eventually(() => expect(dead.open()).toBe(0));
    console.log(
      `[reliability] issue 11: 100 in-flight attempts freed ${Date.now() - start} ms after cancel`,
    );
    const logs = await env.client.logs({ filter: { state: "CANCELED" }, count: 1000 });
    expect(logs.logs.filter((l) => l.url.startsWith(dead.url))).toHaveLength(500);
    // Every slot is usable again: two slow destinations hold 100 each, all 200 at once.
    const slow = [await env.receiver(), await env.receiver()];
    for (const r of slow) r.delayMs = 60_000;
    await batchTo(
      env,
      Array.from({ length: 200 }, (_, i) => `${slow[i % 2]?.url ?? ""}/s${i}`),
    );
    await eventually(async () => expect(await parallelismCount(env.api)).toBe(200));
    await env.api("/v2/messages", { method: "DELETE" });
    await eventually(async () => expect(await parallelismCount(env.api)).toBe(0));
  });

  it("bulk cancel honours count", async () => {
    const rx = await env.receiver();
    for (let i = 0; i < 3; i++) {
      await env.client.publish({ url: `${rx.url}/later`, body: "l", delay: 3600 });
    }
    expect(await env.client.messages.cancel({ all: true, count: 1 })).toEqual({ cancelled: 1 });
    expect(await env.client.messages.cancel({ all: true, count: 100 })).toEqual({ cancelled: 2 });
    expect(await env.client.messages.cancel({ all: true, count: 100 })).toEqual({ cancelled: 0 });
  });
});

describe("FIFO order behind a destination at its share (concurrency 4, share 50 %)", () => {
  let env: QueueTestEnv;
  let dead: DeadReceiver;

  beforeAll(async () => {
    env = await queueEnv({ queueConcurrency: 4, queueDestinationShare: 50 });
    dead = await deadReceiver();
  });
  afterAll(async () => {
    await dead?.close();
    await env?.close();
  });

  it("keeps a queue's later message waiting while its head waits for the dead destination", async () => {
    const rx = await env.receiver();
    await batchTo(env, [`${dead.url}/d0`, `${dead.url}/d1`]);
    await eventually(() => expect(dead.open()).toBe(2));
    await env.api("/v2/queues", {
      method: "POST",
      body: JSON.stringify({ queueName: "fq", parallelism: 2 }),
    });
    const head = await env.client.queue({ queueName: "fq" }).enqueue({ url: `${dead.url}/head` });
    await env.client.queue({ queueName: "fq" }).enqueue({ url: `${rx.url}/second`, body: "2" });
    // Another queue's message (claimed like them, never handed off at publish) is delivered; the
    // queue's second message is not started before its head, which waits for a slot of the dead
    // destination.
    await env.client.queue({ queueName: "fq2" }).enqueue({ url: `${rx.url}/other`, body: "o" });
    expect((await received(rx, 0)).url).toBe(`${rx.url}/other`);
    expect(rx.requests).toHaveLength(1);
    expect(dead.seen).not.toContain("/head");
    // Cancelling the two hanging messages frees the destination's slots: the head starts, then
    // the second message.
    await env.api("/v2/messages", {
      method: "DELETE",
      body: JSON.stringify({ messageIds: await inflightIds(env, dead.url, head.messageId) }),
    });
    await eventually(() => expect(dead.seen).toContain("/head"));
    expect((await received(rx, 1)).url).toBe(`${rx.url}/second`);
  });
});

/** Ids of the messages in flight to `url`, except `except`. */
async function inflightIds(env: QueueTestEnv, url: string, except: string): Promise<string[]> {
  const logs = await env.client.logs({ filter: { state: "ACTIVE" }, count: 1000 });
  return logs.logs
    .filter((l) => l.url.startsWith(url) && l.messageId !== except)
    .map((l) => l.messageId);
}

describe("a cancel through another process sharing the queue Redis", () => {
  let redis: TestRedis;
  let a: TestStashd;
  let b: TestStashd | undefined;
  let dead: DeadReceiver;

  beforeAll(async () => {
    redis = await startRedis();
    a = await startStashd(sharedQueueOptions(redis.url));
    dead = await deadReceiver();
  });
  afterAll(async () => {
    await dead?.close();
    await b?.stop();
    await a?.stop();
    await redis?.stop();
  });

  const api =
    (s: TestStashd) =>
    (path: string, init: RequestInit = {}) =>
      fetch(`${s.queue.url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${TEST_TOKEN}` },
      });

  it("aborts the holder's attempts at its next lease renewal", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await api(a)(`/v2/publish/${dead.url}/x${i}`, { method: "POST", body: "x" });
      ids.push(((await res.json()) as { messageId: string }).messageId);
    }
    await eventually(() => expect(dead.open()).toBe(20));
    // B starts now: A holds every lease, B has nothing to claim.
    b = await startStashd(sharedQueueOptions(redis.url));
    const res = await api(b)(`/v2/messages?messageIds=${ids.join(",")}`, { method: "DELETE" });
    expect(((await res.json()) as { cancelled: number }).cancelled).toBe(20);
    const start = Date.now();
    await eventually(() => expect(dead.open()).toBe(0));
    await eventually(async () => expect(await parallelismCount(api(b as TestStashd))).toBe(0));
    // The lease is 2 s in these tests, renewed every third of it.
    console.log(`[reliability] issue 11: remote cancel aborted in ${Date.now() - start} ms`);
    expect(Date.now() - start).toBeLessThan(2_000);
  });
});
