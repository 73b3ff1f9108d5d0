import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { queueEnv, type QueueTestEnv } from "./setup.js";
import { startTracker, type Tracker } from "./tracker.js";

/**
 * FIFO queues (spec 2.2, 2.5) through `@upstash/qstash`: the queue API's shapes, FIFO order
 * under retries and callbacks, the parallelism limit as seen at the receiver, pause/resume and
 * delete. Receivers verify every signature.
 */
let env: QueueTestEnv;
const trackers: Tracker[] = [];

beforeAll(async () => {
  env = await queueEnv();
});
afterAll(async () => {
  await Promise.all(trackers.map((t) => t.close()));
  await env?.close();
});

async function tracker(timeline?: string[], name?: string): Promise<Tracker> {
  const t = await startTracker(env.keys, timeline, name);
  trackers.push(t);
  return t;
}

/** The original body a callback reports (its `sourceBody`, base64). */
const sourceOf = (callbackBody: string): string =>
  Buffer.from((JSON.parse(callbackBody) as { sourceBody: string }).sourceBody, "base64").toString();

describe("queue API", () => {
  it("upserts, gets, lists, pauses, resumes and deletes with every field present", async () => {
    const q = env.client.queue({ queueName: "api-q" });
    await q.upsert({ parallelism: 2 });
    const got = await q.get();
    expect(got).toEqual({
      name: "api-q",
      parallelism: 2,
      lag: 0,
      paused: false,
      createdAt: expect.any(Number) as number,
      updatedAt: expect.any(Number) as number,
    });
    await q.pause();
    await q.pause();
    expect(await q.get()).toMatchObject({ paused: true, parallelism: 2 });
    await q.resume();
    expect(await q.get()).toMatchObject({ paused: false });
    const list = await env.client.queue().list();
    expect(list.map((x) => x.name)).toContain("api-q");
    // Docs' trailing-slash upsert, Go's parallelism 0 (= 1), case-insensitive segments.
    const up = await env.api("/v2/queues/", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ queueName: "api-q", parallelism: 0, paused: false }),
    });
    expect(up.status).toBe(200);
    expect(await (await env.api("/v2/Queues/api-q")).json()).toMatchObject({ parallelism: 1 });
    await q.delete();
    expect((await env.api("/v2/queues/api-q")).status).toBe(404);
    expect((await env.api("/v2/queues/api-q/pause", { method: "POST" })).status).toBe(404);
    const bad = await env.api("/v2/queues", {
      method: "POST",
      body: JSON.stringify({ queueName: "no spaces" }),
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toHaveProperty("error");
  });

  it("creates the queue on first enqueue with parallelism 1 and counts its lag", async () => {
    const rx = await tracker();
    const q = env.client.queue({ queueName: "auto-q" });
    const paused = await env.api("/v2/queues/auto-q/pause", { method: "POST" });
    expect(paused.status).toBe(404); // pause does not create a queue
    const res = await q.enqueueJSON({ url: `${rx.url}/a`, body: { n: 1 } });
    expect(res.messageId).toMatch(/^msg_/);
    expect(await q.get()).toMatchObject({ name: "auto-q", parallelism: 1, lag: 1, paused: false });
    await eventually(() => expect(rx.answered).toHaveLength(1));
    await eventually(async () => expect(await q.get()).toMatchObject({ lag: 0 }));
    expect(rx.badSignatures).toBe(0);
  });
});

describe("FIFO delivery", () => {
  it("keeps order with parallelism 1 under retries, callbacks and failure callbacks", async () => {
    const timeline: string[] = [];
    const rx = await tracker(timeline, "dest");
    const cb = await tracker(timeline, "cb");
    cb.delayMs = 20;
    // Every message fails its first attempt; message 2 fails for good (failure callback).
    rx.statusOf = (body, retried) => (retried === 0 || body === '"m2"' ? 500 : 200);
    const q = env.client.queue({ queueName: "fifo-q" });
    const n = 5;
    for (let i = 0; i < n; i++) {
      await q.enqueueJSON({
        url: `${rx.url}/fifo`,
        body: `m${i}`,
        retries: 1,
        callback: `${cb.url}/cb`,
        failureCallback: `${cb.url}/fail`,
      });
    }
    // Two callbacks per message (one per attempt), plus the failure callback of m2.
    await eventually(() => expect(cb.answered).toHaveLength(2 * n + 1), { timeoutMs: 10_000 });
    // Walk the timeline: whatever is in flight always belongs to one message, and messages
    // come in FIFO order (each one's attempts and callbacks before the next one starts).
    const inflight = new Map<string, number>();
    const order: string[] = [];
    for (const event of timeline) {
      const [, kind = "", who = "", body = ""] = /^(start|end) (\S+) (.*)$/s.exec(event) ?? [];
      const owner = JSON.parse(who === "dest" ? body : sourceOf(body)) as string;
      if (kind === "start") {
        expect(
          [...inflight.keys()].filter((o) => o !== owner),
          event,
        ).toEqual([]);
        if (order[order.length - 1] !== owner) order.push(owner);
        inflight.set(owner, (inflight.get(owner) ?? 0) + 1);
      } else {
        const left = (inflight.get(owner) ?? 0) - 1;
        if (left === 0) inflight.delete(owner);
        else inflight.set(owner, left);
      }
    }
    expect(order).toEqual(["m0", "m1", "m2", "m3", "m4"]);
    expect(rx.maxInflight).toBe(1);
    expect(rx.answered.map((a) => `${a.body}:${a.retried}`)).toEqual(
      [0, 1, 2, 3, 4].flatMap((i) => [`"m${i}":0`, `"m${i}":1`]),
    );
    expect(rx.badSignatures + cb.badSignatures).toBe(0);
  });

  it("never has more than `parallelism` deliveries in flight", async () => {
    const rx = await tracker();
    // Each answer waits 300 ms, so three deliveries overlap even when the machine is loaded
    // (at 40 ms a loaded CI run once saw at most 2 in flight).
    rx.delayMs = 300;
    const q = env.client.queue({ queueName: "par-q" });
    await q.upsert({ parallelism: 3 });
    for (let i = 0; i < 15; i++) await q.enqueue({ url: `${rx.url}/p`, body: String(i) });
    await eventually(() => expect(rx.answered).toHaveLength(15), { timeoutMs: 10_000 });
    expect(rx.maxInflight).toBe(3);
    // Starts keep FIFO order (all succeed at their first attempt).
    expect(
      rx.answered
        .map((a) => a.body)
        .slice(0, 3)
        .sort(),
    ).toEqual(["0", "1", "2"]);
  });

  it("holds messages of a paused queue and delivers them in order on resume", async () => {
    const rx = await tracker();
    const q = env.client.queue({ queueName: "pause-q" });
    await q.upsert({ parallelism: 2, paused: true });
    for (let i = 0; i < 3; i++) await q.enqueue({ url: `${rx.url}/held`, body: `h${i}` });
    // Barrier: a plain publish to the same receiver, sent after the enqueues, arrives; the held
    // messages (due earlier) would have arrived by then if the pause did not hold them.
    await env.client.publish({ url: `${rx.url}/free`, body: "free" });
    await eventually(() => expect(rx.answered.map((a) => a.body)).toContain("free"));
    expect(rx.answered.map((a) => a.body)).toEqual(["free"]);
    expect(await q.get()).toMatchObject({ paused: true, lag: 3 });
    await q.resume();
    await eventually(() => expect(rx.answered).toHaveLength(4));
    expect(
      rx.answered
        .map((a) => a.body)
        .slice(1)
        .sort(),
    ).toEqual(["h0", "h1", "h2"]);
  });

  it("frees the slot of a cancelled message and drops a cancelled waiting one", async () => {
    const rx = await tracker();
    const q = env.client.queue({ queueName: "cancel-q" });
    // A delayed head message holds the only slot while it waits; the next ones queue behind it.
    const head = await q.enqueue({ url: `${rx.url}/c`, body: "head", delay: 3600 });
    const dropped = await q.enqueue({ url: `${rx.url}/c`, body: "dropped" });
    await q.enqueue({ url: `${rx.url}/c`, body: "next" });
    expect(await q.get()).toMatchObject({ lag: 3 });
    await env.client.messages.cancel(dropped.messageId);
    expect(await q.get()).toMatchObject({ lag: 2 });
    expect(rx.answered).toHaveLength(0);
    await env.client.messages.cancel(head.messageId);
    await eventually(() => expect(rx.answered.map((a) => a.body)).toEqual(["next"]));
    await eventually(async () => expect(await q.get()).toMatchObject({ lag: 0 }));
  });

  it("cancels the waiting messages of a deleted queue", async () => {
    const rx = await tracker();
    const q = env.client.queue({ queueName: "del-q" });
    await q.upsert({ paused: true });
    const { messageId } = await q.enqueue({ url: `${rx.url}/gone`, body: "x" });
    expect(await env.client.messages.get(messageId)).toMatchObject({ queueName: "del-q" });
    await q.delete();
    expect((await env.api(`/v2/messages/${messageId}`)).status).toBe(404);
    const logs = await env.client.logs({ filter: { messageId } });
    expect(logs.logs.map((l) => l.state)).toContain("CANCELED");
  });
});
