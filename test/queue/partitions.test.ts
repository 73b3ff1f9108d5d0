import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fairnessOf, rotate, split } from "../../src/queue/store/claim-plan.js";
import { readQueueDepth } from "../../src/queue/store/depth.js";
import { MessageStore } from "../../src/queue/store/message-store.js";
import { makePartitions, Partitions, type Partition } from "../../src/queue/store/partitions.js";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import { eventually } from "../harness/eventually.js";
import { startRedis, testPool, type TestRedis } from "../harness/redis.js";
import { message } from "./lua-guard.js";
import { partitionsAt, queueEnv, received, type QueueTestEnv } from "./setup.js";
import { startTracker, type Tracker } from "./tracker.js";

/**
 * A queue split into 3 partitions on one Redis (docs/scaling.md, Queue partitions): where
 * messages, queues, flow-control keys and dedup keys are placed, that everything placed anywhere
 * is delivered, and that listings merged over the partitions page through every entry once.
 */
const COUNT = 3;
let env: QueueTestEnv;
let pool: RedisPool;
let parts: Partitions;
const trackers: Tracker[] = [];
/** Log entries written straight into every partition's stream with the same stream ids. */
const TIE_URL = "http://tie.example/";
let tieOrder: string[];
/** The destination of the first test's publishes (whose logs a later test pages through). */
let spreadUrl = "";

beforeAll(async () => {
  env = await queueEnv({ queuePartitions: COUNT });
  pool = testPool(env.redis.url);
  parts = await partitionsAt(pool);
  tieOrder = await writeTiedLogs();
});
afterAll(async () => {
  await Promise.all(trackers.map((t) => t.close()));
  await pool?.close();
  await env?.close();
});

/**
 * Entries `<t>-0..2` in every partition's log, `t` a minute ago (before any real event, within
 * retention); returns their message ids in listing order: by id, then by partition.
 */
async function writeTiedLogs(): Promise<string[]> {
  const t = Date.now() - 60_000;
  const order: string[] = [];
  for (let seq = 0; seq < 3; seq++) {
    for (const p of parts.all) {
      const messageId = `tie-${p.index}-${seq}`;
      const meta = { messageId, url: TIE_URL, method: "POST", header: {}, depth: 0 };
      await pool.exec([
        "XADD",
        p.keys.log,
        `${t}-${seq}`,
        ...["state", "CREATED", "time", String(Date.now()), "meta", JSON.stringify(meta)],
      ]);
      order.push(messageId);
    }
  }
  return order;
}

async function tracker(): Promise<Tracker> {
  const t = await startTracker(env.keys);
  trackers.push(t);
  return t;
}

const exists = async (key: string): Promise<boolean> => {
  const reply = await pool.exec(["EXISTS", key]);
  return reply.kind === "int" && reply.value === "1";
};

/** A name whose partition differs from `other`'s. */
function nameElsewhere(base: string, other: Partition): string {
  let n = 0;
  while (parts.ofName(`${base}${n}`) === other) n++;
  return `${base}${n}`;
}

async function publish(path: string, body: string, headers: Record<string, string> = {}) {
  const res = await env.api(`/v2/${path}`, { method: "POST", body, headers });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

const idOf = (r: { json: Record<string, unknown> }): string => String(r.json["messageId"]);

/** Every page of a listing from `first` on; the pages' items concatenated. */
async function allPages<T>(
  page: (cursor: string | undefined) => Promise<{ items: T[]; cursor?: string | undefined }>,
): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 200; i++) {
    const p = await page(cursor);
    out.push(...p.items);
    if (!p.cursor) return out;
    cursor = p.cursor;
  }
  throw new Error("the listing did not end");
}

describe("message placement over 3 partitions", () => {
  it("spreads plain publishes over every partition and delivers them all", async () => {
    const rx = await env.receiver();
    spreadUrl = `${rx.url}/spread`;
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const r = await publish(`publish/${spreadUrl}`, `s${i}`, { "Upstash-Delay": "1s" });
      expect(r.status).toBe(201);
      ids.push(idOf(r));
      // Each message's hash is in its id's partition (looked at within its 1 s delay: on a
      // loaded machine the 30 publishes can take longer than that, and a delivered message's
      // hash is gone).
      const id = idOf(r);
      expect(await exists(parts.ofMessage(id).keys.message(id))).toBe(true);
    }
    // 30 random ids miss a partition with probability 3 * (2/3)^30 (1.5e-5).
    expect(new Set(ids.map((id) => parts.ofMessage(id).index)).size).toBe(COUNT);
    await eventually(() => expect(rx.requests).toHaveLength(30), { timeoutMs: 10_000 });
    expect(rx.requests.map((r) => r.body).sort()).toEqual(ids.map((_, i) => `s${i}`).sort());
  });

  it("keeps a FIFO queue's order, its keys and its messages in the queue's partition", async () => {
    const rx = await env.receiver();
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push(idOf(await publish(`enqueue/pfifo/${rx.url}/f`, `${i}`)));
    await eventually(() => expect(rx.requests).toHaveLength(10), { timeoutMs: 10_000 });
    expect(rx.requests.map((r) => r.body)).toEqual([..."0123456789"]);
    const home = parts.ofName("pfifo");
    expect(ids.every((id) => parts.ofMessage(id) === home)).toBe(true);
    for (const p of parts.all) expect(await exists(p.keys.queue("pfifo"))).toBe(p === home);
    const listed = (await (await env.api("/v2/queues")).json()) as { name: string }[];
    expect(listed.map((q) => q.name)).toContain("pfifo");
  });

  it("keeps each flow-control key's parallelism, keys in different partitions at once", async () => {
    const first = "pfc-a";
    const second = nameElsewhere("pfc-b", parts.ofName(first));
    const rxs = [await tracker(), await tracker()];
    const ids: string[][] = [[], []];
    for (const rx of rxs) rx.delayMs = 100;
    for (let n = 0; n < 6; n++) {
      for (const [i, key] of [first, second].entries()) {
        const r = await publish(`publish/${rxs[i]?.url}/fc`, `${n}`, {
          "Upstash-Flow-Control-Key": key,
          "Upstash-Flow-Control-Value": "parallelism=2",
        });
        ids[i]?.push(idOf(r));
      }
    }
    for (const rx of rxs) {
      await eventually(() => expect(rx.answered).toHaveLength(6), { timeoutMs: 10_000 });
      expect(rx.maxInflight).toBe(2);
    }
    expect(ids[0]?.every((id) => parts.ofMessage(id) === parts.ofName(first))).toBe(true);
    expect(ids[1]?.every((id) => parts.ofMessage(id) === parts.ofName(second))).toBe(true);
    const keys = (await (await env.api("/v2/flowControl")).json()) as { flowControlKey: string }[];
    expect(keys.map((k) => k.flowControlKey)).toEqual(expect.arrayContaining([first, second]));
  });

  it("deduplicates by placing a publish in its deduplication key's partition", async () => {
    const rx = await env.receiver();
    const headers = { "Upstash-Deduplication-Id": "pdedup-1" };
    const a = await publish(`publish/${rx.url}/d`, "once", headers);
    const b = await publish(`publish/${rx.url}/d`, "once", headers);
    expect([a.status, b.status]).toEqual([201, 202]);
    expect(b.json).toMatchObject({ messageId: idOf(a), deduplicated: true });
    expect(parts.ofMessage(idOf(a))).toBe(parts.ofName("id:pdedup-1"));
    await received(rx, 0);
    await new Promise((r) => setTimeout(r, 300));
    expect(rx.requests).toHaveLength(1);
  });

  it("refuses a queue and a flow-control key in different partitions with a JSON 400", async () => {
    const rx = await env.receiver();
    const key = nameElsewhere("pkey", parts.ofName("psplit"));
    const fc = { "Upstash-Flow-Control-Value": "parallelism=1" };
    const refused = await publish(`enqueue/psplit/${rx.url}/x`, "x", {
      ...fc,
      "Upstash-Flow-Control-Key": key,
    });
    expect(refused.status).toBe(400);
    expect(String(refused.json["error"])).toMatch(/different queue partitions.*\{psplit\}/);
    // Nothing was stored: the queue was not even created.
    expect((await env.api("/v2/queues/psplit")).status).toBe(404);
    const tagged = await publish(`enqueue/psplit/${rx.url}/x`, "x", {
      ...fc,
      "Upstash-Flow-Control-Key": `${key}-{psplit}`,
    });
    expect(tagged.status).toBe(201);
    await received(rx, 0);
  });

  it("gets and cancels messages by id in whichever partition holds them", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 9; i++) {
      ids.push(
        idOf(await publish("publish/http://127.0.0.1:9/later", "x", { "Upstash-Delay": "1h" })),
      );
    }
    expect(new Set(ids.map((id) => parts.ofMessage(id))).size).toBeGreaterThan(1);
    for (const id of ids) expect((await env.api(`/v2/messages/${id}`)).status).toBe(200);
    for (const id of ids.slice(0, 3)) {
      const res = await env.api(`/v2/messages/${id}`, { method: "DELETE" });
      expect(await res.json()).toEqual({ cancelled: 1 });
    }
    const bulk = await env.api("/v2/messages", {
      method: "DELETE",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messageIds: ids.slice(3) }),
    });
    expect(await bulk.json()).toEqual({ cancelled: 6 });
    for (const id of ids) expect((await env.api(`/v2/messages/${id}`)).status).toBe(404);
  });

  it("delivers callbacks, each created in its message's partition", async () => {
    const rx = await env.receiver();
    const cb = await env.receiver();
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await publish(`publish/${rx.url}/c`, `c${i}`, {
        "Upstash-Callback": `${cb.url}/cb`,
      });
      ids.push(idOf(r));
    }
    await eventually(() => expect(cb.requests).toHaveLength(6), { timeoutMs: 10_000 });
    for (const r of cb.requests) {
      const source = (JSON.parse(r.body) as { sourceMessageId: string }).sourceMessageId;
      expect(ids).toContain(source);
      const own = String(r.headers["upstash-message-id"]);
      expect(parts.ofMessage(own)).toBe(parts.ofMessage(source));
    }
  });

  it("sums the depth over the partitions", async () => {
    const before = await readQueueDepth(parts);
    const ids: string[] = [];
    for (let i = 0; i < 9; i++) {
      ids.push(
        idOf(await publish("publish/http://127.0.0.1:9/depth", "x", { "Upstash-Delay": "1h" })),
      );
    }
    const after = await readQueueDepth(parts);
    expect(after.delayed - before.delayed).toBe(9);
    expect(after.pending - before.pending).toBe(9);
    const perPartition = await Promise.all(
      parts.all.map((p) => readQueueDepth(new Partitions([p]))),
    );
    expect(perPartition.reduce((n, d) => n + d.delayed, 0)).toBe(after.delayed);
    await env.api("/v2/messages", {
      method: "DELETE",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messageIds: ids }),
    });
  });
});

interface DlqPage {
  messages: { dlqId: string; messageId: string }[];
  cursor?: string;
}

describe("listings merged over 3 partitions", () => {
  it("pages through the DLQ once in id order both ways; gets, retries and deletes by id", async () => {
    const rx = await env.receiver();
    rx.status = 500;
    const url = `${rx.url}/dead`;
    for (let i = 0; i < 12; i++)
      await publish(`publish/${url}`, `d${i}`, { "Upstash-Retries": "0" });
    const stored = async () => {
      const lists = await parts.each(async (p) => {
        const reply = await pool.exec(["ZRANGE", p.keys.dlq, "0", "-1"]);
        return reply.kind === "array"
          ? reply.value.map((r) => String(r.kind === "bulk" && r.value))
          : [];
      });
      return lists;
    };
    await eventually(async () => expect((await stored()).flat()).toHaveLength(12), {
      timeoutMs: 10_000,
    });
    const lists = await stored();
    expect(lists.filter((l) => l.length > 0).length).toBeGreaterThan(1);
    const sorted = lists.flat().sort();
    const q = `url=${encodeURIComponent(url)}&count=5`;
    const pages = (order: string) =>
      allPages(async (cursor) => {
        const c = cursor ? `&cursor=${cursor}` : "";
        const page = (await (await env.api(`/v2/dlq?${q}${order}${c}`)).json()) as DlqPage;
        return { items: page.messages, cursor: page.cursor };
      });
    const earliest = await pages("");
    expect(earliest.map((m) => m.dlqId)).toEqual(sorted);
    expect((await pages("&order=latestFirst")).map((m) => m.dlqId)).toEqual([...sorted].reverse());
    // By id, in whichever partition: get, retry (the new message placed beside the old one).
    for (const m of earliest.slice(0, 4)) {
      expect((await env.api(`/v2/dlq/${m.dlqId}`)).status).toBe(200);
    }
    const [first, ...rest] = earliest;
    rx.status = 200;
    const retried = await env.api(`/v2/dlq/retry/${first?.dlqId}`, { method: "POST" });
    const { messageId } = (await retried.json()) as { messageId: string };
    expect(parts.ofMessage(messageId)).toBe(parts.ofMessage(String(first?.messageId)));
    await eventually(() =>
      expect(rx.requests.map((r) => r.headers["upstash-message-id"])).toContain(messageId),
    );
    const deleted = await env.api("/v2/dlq", {
      method: "DELETE",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ dlqIds: rest.map((m) => m.dlqId) }),
    });
    expect(await deleted.json()).toEqual({ deleted: 11 });
    expect((await stored()).flat()).toHaveLength(0);
  });

  it("pages through the logs once, entries with the same stream id in several partitions too", async () => {
    const logs = (query: string) =>
      allPages(async (cursor) => {
        const c = cursor ? `&cursor=${cursor}` : "";
        const page = (await (await env.api(`/v2/logs?${query}${c}`)).json()) as {
          logs: { messageId: string; state: string; time: number }[];
          cursor?: string;
        };
        return { items: page.logs, cursor: page.cursor };
      });
    const tie = `url=${encodeURIComponent(TIE_URL)}`;
    for (const count of [1, 2, 4]) {
      const up = await logs(`${tie}&order=earliestFirst&count=${count}`);
      expect(up.map((e) => e.messageId)).toEqual(tieOrder);
      const down = await logs(`${tie}&count=${count}`);
      expect(down.map((e) => e.messageId)).toEqual([...tieOrder].reverse());
    }
    // The first test's 30 deliveries (3 events each, in every partition) in pages of 7.
    const spread = `url=${encodeURIComponent(spreadUrl)}`;
    for (const order of ["earliestFirst", "latestFirst"]) {
      const whole = await logs(`${spread}&order=${order}&count=1000`);
      expect(whole).toHaveLength(90);
      expect(await logs(`${spread}&order=${order}&count=7`)).toEqual(whole);
      const seen = whole.map((e) => `${e.messageId} ${e.state}`);
      expect(new Set(seen).size).toBe(90);
    }
  });
});

describe("the max-queues limit", () => {
  it("counts the queues of every partition", async () => {
    const small = await queueEnv({ queuePartitions: COUNT, queueMaxQueues: 2 });
    try {
      const names = parts.all.map((p) => {
        let n = 0;
        while (parts.ofName(`lim${n}`) !== p) n++;
        return `lim${n}`;
      });
      const upsert = (name: string) =>
        small.api(`/v2/queues`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ queueName: name, parallelism: 1 }),
        });
      expect((await upsert(names[0] ?? "")).status).toBe(200);
      expect((await upsert(names[1] ?? "")).status).toBe(200);
      expect((await upsert(names[2] ?? "")).status).toBe(412);
      const rx = await small.receiver();
      const enqueued = await small.api(`/v2/enqueue/${names[2]}/${rx.url}/x`, { method: "POST" });
      expect(enqueued.status).toBe(412);
      await small.api(`/v2/queues/${names[0]}`, { method: "DELETE" });
      expect((await upsert(names[2] ?? "")).status).toBe(200);
    } finally {
      await small.close();
    }
  });
});

describe("a claim over partitions", () => {
  it("splits a limit evenly, the odd slots first, and rotates", () => {
    expect(split(7, 3)).toEqual([3, 2, 2]);
    expect(split(2, 3)).toEqual([1, 1, 0]);
    expect(rotate(["a", "b", "c"], 4)).toEqual(["b", "c", "a"]);
  });

  it("splits every destination's remaining budget rounded up; one script keeps it whole", () => {
    const counts = new Map([["http://a", 4]]);
    expect(fairnessOf(10, counts, 1)).toEqual({ cap: 10, inflight: [["http://a", 4]] });
    // 6 left for a: 2 per script; a fresh origin gets 4 of 10 per script (12, 2 over).
    expect(fairnessOf(10, counts, 3)).toEqual({ cap: 4, inflight: [["http://a", 2]] });
    expect(fairnessOf(0, counts, 3)).toEqual({ cap: 0, inflight: [["http://a", 4]] });
  });

  describe("on a MessageStore of 3 partitions", () => {
    let redis: TestRedis;
    let own: RedisPool;
    let store: MessageStore;
    beforeAll(async () => {
      redis = await startRedis();
      own = testPool(redis.url, 2);
      store = new MessageStore(
        makePartitions(COUNT, () => own),
        60_000,
      );
    });
    afterAll(async () => {
      await own?.close();
      await redis?.stop();
    });

    /** Stores `n` messages due now to `url` in partition `p`. */
    async function fill(p: Partition, n: number, url: string): Promise<void> {
      const now = Date.now();
      for (let i = 0; i < n; i++) {
        await store.enqueue(now, [message(store.parts.newMessageId(p), now, { url })]);
      }
    }

    it("takes what idle partitions leave from the busy one, never more than the limit", async () => {
      await own.exec(["FLUSHALL"]);
      const [a, b] = store.parts.all as [Partition, Partition];
      await fill(a, 10, "http://a.example/");
      await fill(b, 1, "http://b.example/");
      for (let round = 0; round < 3; round++) {
        const { claimed } = await store.claim(Date.now(), 4, 60_000);
        expect(claimed.length).toBeLessThanOrEqual(4);
        if (round < 2) expect(claimed).toHaveLength(4);
      }
      expect(await store.nextDue()).toBeUndefined();
    });

    it("keeps a destination within its cap plus the partition count", async () => {
      await own.exec(["FLUSHALL"]);
      for (const p of store.parts.all) await fill(p, 10, "http://same.example/");
      const fair = { cap: 4, scan: 100, inflight: [] };
      const { claimed, atShare } = await store.claim(Date.now(), 20, 60_000, fair);
      expect(claimed.length).toBeGreaterThanOrEqual(4);
      expect(claimed.length).toBeLessThanOrEqual(4 + COUNT - 1);
      expect(atShare).toEqual(["http://same.example"]);
    });

    it("gives a destination in one partition its whole cap in one claim", async () => {
      await own.exec(["FLUSHALL"]);
      await fill(store.parts.main, 10, "http://one.example/");
      const fair = { cap: 5, scan: 100, inflight: [] };
      const { claimed, atShare } = await store.claim(Date.now(), 20, 60_000, fair);
      expect(claimed).toHaveLength(5);
      expect(atShare).toEqual(["http://one.example"]);
    });
  });
});
