import { Redis } from "@upstash/redis";
import { afterAll, describe, expect, it } from "vitest";
import { hashSlot } from "../../src/shared/redis/cluster/slot.js";
import { onNode, ownerPort } from "../harness/cluster.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { keyPerMaster, useCluster, type ClusterContext } from "./context.js";

/**
 * VECTOR.* on a Redis Cluster (docs/vector.md, "Redis Cluster"): each index is one hash and a
 * change log in its slot, so indexes spread over the masters; a second stashd on the same
 * cluster sees the first one's writes; the read-only token queries but cannot write.
 */
let ctx: ClusterContext;
useCluster((c) => (ctx = c), { kvVectorHnswMinVectors: 40 });
let second: TestStashd | undefined;
afterAll(async () => second?.stop());

function unit(i: number): number[] {
  const v = Array.from({ length: 6 }, (_, j) => Math.cos(i * 3.1 + j * 0.9) + 0.02 * j);
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

describe("vector indexes on a Redis Cluster", () => {
  it("serve indexes whose keys live on every master, each index and its log in one slot", async () => {
    const names = await keyPerMaster(ctx.cluster, "vec");
    const owners = new Set<number>();
    for (const [n, name] of names.entries()) {
      const index = await ctx.sdk.vector.createIndex({ name, dimension: 6, metric: "COSINE" });
      for (let i = 0; i < 60; i++) await index.add(`${n}-${i}`, unit(i));
      expect(await index.count()).toBe(60);
      expect((await index.query({ vector: unit(17), topK: 1, profile: "PRECISE" }))[0]?.id).toBe(
        `${n}-17`,
      );
      const owner = await ownerPort(ctx.cluster.ports[0] as number, hashSlot(name));
      owners.add(owner);
      const logKey = `{${name}}stashd:vector-log:${name}`;
      expect(hashSlot(logKey)).toBe(hashSlot(name));
      expect(await onNode(owner, ["HLEN", name])).toEqual({ kind: "int", value: "64" });
      expect(await onNode(owner, ["XLEN", logKey])).toEqual({ kind: "int", value: "60" });
    }
    expect(owners.size).toBe(3);
  });

  it("lets a second stashd on the cluster see the first one's writes, by every profile", async () => {
    const [name] = await keyPerMaster(ctx.cluster, "shared");
    const first = await ctx.sdk.vector.createIndex({
      name: name as string,
      dimension: 6,
      metric: "EUCLIDEAN",
    });
    for (let i = 0; i < 50; i++) await first.add(`s${i}`, unit(i));
    second = await startStashd({ kvRedisUrl: ctx.cluster.url, kvVectorHnswMinVectors: 40 });
    const other = new Redis({ url: second.kv.url, token: second.kv.token }).vector.index(
      name as string,
    );
    expect((await other.query({ vector: unit(33), topK: 1, profile: "PRECISE" }))[0]?.id).toBe(
      "s33",
    );
    await first.delete("s33");
    await first.add("new", unit(33));
    for (const profile of ["PRECISE", "BALANCED", "FAST"] as const) {
      const hits = await other.query({ vector: unit(33), topK: 2, profile });
      expect(hits[0]).toEqual({ id: "new", score: expect.closeTo(1, 5) as number });
      expect(hits.map((h) => h.id)).not.toContain("s33");
    }
  });

  it("lets the read-only token query and count but not add", async () => {
    const index = await ctx.sdk.vector.createIndex({ name: "ro{x}", dimension: 6, metric: "DOT" });
    await index.add("a", unit(1));
    const ro = ctx.readonly.vector.index("ro{x}");
    expect(await ro.count()).toBe(1);
    expect((await ro.query({ vector: unit(1), topK: 1 }))[0]?.id).toBe("a");
    await expect(ro.add("b", unit(2))).rejects.toThrow(/NOPERM/);
  });
});
