import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";

/**
 * Redis is the vector indexes' only truth (docs/vector.md, "Storage"): two stashd processes on
 * one Redis see each other's writes at their next query, and a restarted stashd finds its
 * indexes whole. The HNSW threshold is low, so the graphs (FAST, BALANCED) are tested too.
 */
let redis: TestRedis;
let a: TestStashd;
let b: TestStashd;
const options = { services: ["kv" as const], kvVectorHnswMinVectors: 50 };

beforeAll(async () => {
  redis = await startRedis();
  a = await startStashd({ kvRedisUrl: redis.url, ...options });
  b = await startStashd({ kvRedisUrl: redis.url, ...options });
});
afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await redis?.stop();
});

const sdk = (s: TestStashd): Redis => new Redis({ url: s.kv.url, token: s.kv.token });

/** A seeded unit vector in 8 dimensions. */
function unit(i: number): number[] {
  const v = Array.from({ length: 8 }, (_, j) => Math.sin(i * 7.13 + j * 1.7) + 0.01 * j);
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

describe("two stashd processes on one Redis", () => {
  it("see each other's adds, overwrites and deletes at the next query, by every profile", async () => {
    const onA = await sdk(a).vector.createIndex({ name: "two", dimension: 8, metric: "COSINE" });
    const onB = sdk(b).vector.index("two");
    for (let i = 0; i < 120; i++) await onA.add(`v${i}`, unit(i));
    // B loads the index whole on its first query (and starts its graph).
    expect((await onB.query({ vector: unit(5), topK: 1, profile: "PRECISE" }))[0]?.id).toBe("v5");
    await onA.add("v5", unit(1000));
    await onA.delete("v6");
    expect((await onB.query({ vector: unit(1000), topK: 1, profile: "PRECISE" }))[0]?.id).toBe(
      "v5",
    );
    const ids = (await onB.query({ vector: unit(6), topK: 120, profile: "PRECISE" })).map(
      (h) => h.id,
    );
    expect(ids).not.toContain("v6");
    expect(ids).toHaveLength(119);
    // Once B's graph is built, FAST and BALANCED find the same nearest neighbour.
    await onB.delete("v7");
    for (const profile of ["FAST", "BALANCED"] as const) {
      await eventually(async () => {
        const hits = await onA.query({ vector: unit(8), topK: 5, profile });
        expect(hits[0]).toEqual({ id: "v8", score: expect.closeTo(1, 5) as number });
        expect(hits.map((h) => h.id)).not.toContain("v7");
      });
      expect((await onB.query({ vector: unit(9), topK: 3, profile }))[0]?.id).toBe("v9");
    }
    expect(await onA.count()).toBe(118);
  });

  it("notice an index dropped and made anew with another DIM by the other process", async () => {
    const onA = await sdk(a).vector.createIndex({ name: "renew", dimension: 8, metric: "DOT" });
    await onA.add("x", unit(1));
    const onB = sdk(b).vector.index("renew");
    expect(await onB.query({ vector: unit(1), topK: 1 })).toHaveLength(1);
    await onB.drop();
    await sdk(b).vector.createIndex({ name: "renew", dimension: 2, metric: "EUCLIDEAN" });
    await sdk(b).vector.index("renew").add("y", [1, 1]);
    expect(await onA.info()).toEqual({ dimension: 2, metric: "EUCLIDEAN" });
    expect(await onA.query({ vector: [1, 1], topK: 5 })).toEqual([{ id: "y", score: 1 }]);
  });

  it("notice a log gap (the change log deleted behind stashd's back) and load the index whole", async () => {
    const onA = await sdk(a).vector.createIndex({ name: "gap", dimension: 8, metric: "COSINE" });
    await onA.add("p", unit(1));
    const onB = sdk(b).vector.index("gap");
    expect(await onB.count()).toBe(1);
    expect(await onB.query({ vector: unit(1), topK: 2 })).toHaveLength(1);
    await onA.add("q", unit(2));
    await sdk(a).del("{gap}stashd:vector-log:gap");
    expect((await onB.query({ vector: unit(2), topK: 2 })).map((h) => h.id)).toEqual(["q", "p"]);
  });
});

describe("a restarted stashd", () => {
  it("finds its indexes whole in Redis", async () => {
    const index = await sdk(a).vector.createIndex({
      name: "kept",
      dimension: 8,
      metric: "EUCLIDEAN",
    });
    for (let i = 0; i < 60; i++) await index.add(`k${i}`, unit(i));
    const dataDir = a.dataDir;
    await a.stopKeepingData();
    a = await startStashd({ kvRedisUrl: redis.url, ...options, dataDir });
    const again = sdk(a).vector.index("kept");
    expect(await again.info()).toEqual({ dimension: 8, metric: "EUCLIDEAN" });
    expect(await again.count()).toBe(60);
    // Elements come back as the shortest text of each stored FP32 value.
    const stored = (await again.get("k3"))?.map((x) => Math.fround(x));
    expect(stored).toEqual(unit(3).map((x) => Math.fround(x)));
    expect((await again.query({ vector: unit(42), topK: 1, profile: "PRECISE" }))[0]?.id).toBe(
      "k42",
    );
  });
});
