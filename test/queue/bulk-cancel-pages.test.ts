import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textOf } from "../../src/shared/redis/cluster/commands.js";
import { prefixOf } from "../../src/queue/store/keys.js";
import { partitionTags } from "../../src/queue/store/partitions.js";
import { testPool } from "../harness/redis.js";
import { queueEnv, type QueueTestEnv } from "./setup.js";

/**
 * `DELETE /v2/messages` walks the pending set a page of 1000 ids at a time (routes/messages.ts,
 * cancelMatching; docs/operations.md, "Event-loop holds"), over 3 partitions here. Messages of a
 * batch are stored within the same milliseconds, so pages end inside runs of equal times: the
 * `count` and filter semantics must hold across page ends, each message counted once.
 */
const PER_URL = 1_300;

let env: QueueTestEnv;
let idsOf: Record<"a" | "b", string[]>;

beforeAll(async () => {
  env = await queueEnv({ queuePartitions: 3 });
  const rx = await env.receiver();
  idsOf = { a: [], b: [] };
  // Alternating destinations, 2 x 1300 delayed messages in batches of 1000 (the cap).
  const items = Array.from({ length: 2 * PER_URL }, (_, i) => ({
    destination: `${rx.url}/${i % 2 === 0 ? "a" : "b"}`,
    body: String(i),
    headers: { "Upstash-Delay": "1h" },
  }));
  for (let from = 0; from < items.length; from += 1000) {
    const batch = items.slice(from, from + 1000);
    const res = await env.api("/v2/batch", { method: "POST", body: JSON.stringify(batch) });
    expect(res.status).toBe(201);
    const stored = (await res.json()) as { messageId: string }[];
    stored.forEach((m, i) => idsOf[(from + i) % 2 === 0 ? "a" : "b"].push(m.messageId));
  }
  aUrl = `${rx.url}/a`;
}, 60_000);
afterAll(async () => {
  await env?.close();
});

let aUrl = "";

async function cancelled(query: string): Promise<number> {
  const res = await env.api(`/v2/messages${query}`, { method: "DELETE" });
  expect(res.status).toBe(200);
  return ((await res.json()) as { cancelled: number }).cancelled;
}

async function stillPending(ids: readonly string[]): Promise<number> {
  const statuses = await Promise.all(
    ids.map(async (id) => (await env.api(`/v2/messages/${id}`)).status),
  );
  return statuses.filter((s) => s === 200).length;
}

describe("bulk cancel over more pending messages than a page", () => {
  it("keeps count and filters exact across pages and partitions", async () => {
    const url = `?url=${encodeURIComponent(aUrl)}`;
    // A filter matching every other message: 700 of them span more than one page of 1000 ids.
    expect(await cancelled(`${url}&count=700`)).toBe(700);
    expect(await stillPending(idsOf.a)).toBe(PER_URL - 700);
    expect(await cancelled(`${url}&count=700`)).toBe(PER_URL - 700);
    expect(await cancelled(`${url}&count=700`)).toBe(0);
    expect(await stillPending(idsOf.a)).toBe(0);
    expect(await stillPending(idsOf.b)).toBe(PER_URL);
    // The JS SDK's `{all: true}`: count=100 again and again until 0.
    expect(await env.client.messages.cancel({ all: true, count: 1_000 })).toEqual({
      cancelled: 1_000,
    });
    expect(await cancelled("")).toBe(PER_URL - 1_000);
    expect(await cancelled("")).toBe(0);
    expect(await stillPending(idsOf.b)).toBe(0);
  }, 60_000);

  it("steps over runs of equal stored times longer than a page", async () => {
    const rx = await env.receiver();
    const items = Array.from({ length: 1000 }, (_, i) => ({
      destination: `${rx.url}/tie`,
      body: String(i),
      headers: { "Upstash-Delay": "1h" },
    }));
    for (let i = 0; i < 3; i++) {
      const res = await env.api("/v2/batch", { method: "POST", body: JSON.stringify(items) });
      expect(res.status).toBe(201);
    }
    // Every pending message stored "at the same millisecond": runs of 1000 per partition and
    // more, which a page (1000) must step over by offset rather than stop inside.
    const pool = testPool(env.redis.url, 1);
    try {
      for (const tag of partitionTags(3)) {
        const key = `${prefixOf(tag)}pending`;
        const ids = await pool.exec(["ZRANGE", key, "0", "-1"]);
        const members = ids.kind === "array" ? ids.value.map((m) => textOf(m) ?? "") : [];
        expect(members.length).toBeGreaterThan(0);
        for (let i = 0; i < members.length; i += 500) {
          const pairs = members.slice(i, i + 500).flatMap((id) => ["1000", id]);
          await pool.exec(["ZADD", key, "XX", ...pairs]);
        }
      }
    } finally {
      await pool.close();
    }
    expect(await cancelled("?count=1500")).toBe(1500);
    expect(await cancelled("?count=1000")).toBe(1000);
    expect(await cancelled("")).toBe(500);
    expect(await cancelled("")).toBe(0);
  }, 60_000);
});
