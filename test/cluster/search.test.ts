import { Redis, s } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { hashSlot } from "../../src/shared/redis/cluster/slot.js";
import { ownerPort } from "../harness/cluster.js";
import { startStashd } from "../harness/stashd.js";
import { keyPerMaster, spreadKeys, useCluster, type ClusterContext } from "./context.js";

/**
 * SEARCH on a Redis Cluster (docs/search.md): an index's keys spread over the three masters are
 * scanned and followed on each, a key changed directly on its node is seen, a second stashd
 * process serves the same index, and the definitions live on one master under their hash tag.
 */
let c: ClusterContext;
useCluster((ready) => (c = ready));

const schema = s.object({ title: s.string(), n: s.number("U64") });

describe("SEARCH on a Redis Cluster", () => {
  it("indexes keys on every master, follows direct writes, and serves a second process", async () => {
    const before = spreadKeys("pre", 90);
    await Promise.all(
      before.map((key, i) => c.sdk.hset(key, { title: `old document ${i}`, n: i })),
    );
    const index = await c.sdk.search.createIndex({
      name: "spread",
      schema,
      dataType: "hash",
      prefix: "pre:",
    });
    expect(await index.waitIndexing()).toBe(1);
    expect(await index.count({ filter: { title: "document" } })).toEqual({ count: 90 });

    const after = spreadKeys("pre:new", 30);
    await Promise.all(
      after.map((key, i) => c.sdk.hset(key, { title: `fresh document ${i}`, n: 1000 + i })),
    );
    const perMaster = await keyPerMaster(c.cluster, "pre");
    for (const key of perMaster) {
      const port = await ownerPort(c.cluster.ports[0] as number, hashSlot(key));
      expect(
        await c.node(port, ["HSET", key, "title", "changed behind stashd", "n", "7"]),
      ).toMatchObject({ kind: "int" });
    }
    expect(await index.waitIndexing()).toBe(1);
    expect(await index.count({ filter: { title: "fresh" } })).toEqual({ count: 30 });
    expect(await index.count({ filter: { title: "behind" } })).toEqual({ count: perMaster.length });
    expect(await index.count({ filter: { n: { $gte: 1000 } } })).toEqual({ count: 30 });

    const other = await startStashd({ kvRedisUrl: c.cluster.url, services: ["kv"] });
    try {
      const sdk = new Redis({ url: other.kv.url, token: other.kv.token });
      expect(await sdk.search.index({ name: "spread" }).count({ filter: {} })).toEqual({
        count: 120,
      });
    } finally {
      await other.stop();
    }
    const defsSlot = hashSlot("{stashd:search}:indexes");
    const owner = await ownerPort(c.cluster.ports[0] as number, defsSlot);
    expect(await c.node(owner, ["HEXISTS", "{stashd:search}:indexes", "spread"])).toEqual({
      kind: "int",
      value: "1",
    });
  }, 60_000);
});
