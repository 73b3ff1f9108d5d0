import { describe, expect, it } from "vitest";
import { hashSlot } from "../../src/shared/redis/cluster/slot.js";
import { useCluster, spreadKeys, type ClusterContext } from "./context.js";

let c: ClusterContext;
useCluster((ready) => (c = ready));

describe("KV on a Redis Cluster: routing", () => {
  it("detects the cluster from one node's URL and routes each key to its master", async () => {
    const keys = spreadKeys("route", 60);
    for (const key of keys) expect(await c.direct.set(key, `v-${key}`)).toBe("OK");
    for (const key of keys) expect(await c.direct.get(key)).toBe(`v-${key}`);
    // Every master holds some of them: the keys really were spread.
    const masters = await c.masters();
    expect(masters).toHaveLength(3);
    for (const port of masters) {
      const size = await c.node(port, ["DBSIZE"]);
      expect(size.kind === "int" && Number(size.value)).toBeGreaterThan(0);
    }
  });

  it("computes Redis's own hash slots, hash tags included", async () => {
    const reply = await c.node(c.cluster.ports[0] as number, ["CLUSTER", "KEYSLOT", "{user1}:a"]);
    expect(reply).toEqual({ kind: "int", value: String(hashSlot("{user1}:a")) });
    expect(hashSlot("{user1}:a")).toBe(hashSlot("user1"));
    expect(hashSlot("123456789")).toBe(12739);
  });

  it("splits a pipeline by node and reassembles the replies in order", async () => {
    const keys = spreadKeys("pipe", 40);
    const p = c.sdk.pipeline();
    keys.forEach((key, i) => p.set(key, i));
    keys.forEach((key) => p.incr(key));
    keys.forEach((key) => p.get(key));
    const replies = await p.exec();
    expect(replies).toEqual([
      ...keys.map(() => "OK"),
      ...keys.map((_, i) => i + 1),
      ...keys.map((_, i) => i + 1),
    ]);
  });

  it("runs multi-key commands, scripts and transactions within one slot", async () => {
    const [a, b] = ["{acct}:a", "{acct}:b"];
    expect(await c.direct.mset({ [a]: 1, [b]: 2 })).toBe("OK");
    expect(await c.direct.mget(a, b)).toEqual([1, 2]);
    expect(await c.direct.eval("return redis.call('INCRBY', KEYS[1], ARGV[1])", [a], [10])).toBe(
      11,
    );
    const tx = c.sdk.multi();
    tx.incr(a);
    tx.decr(b);
    tx.get(a);
    expect(await tx.exec()).toEqual([12, 1, 12]);
  });

  it("splits MSET, MGET, EXISTS and TOUCH by slot, as Redis Cluster's tips say", async () => {
    const keys = spreadKeys("multi", 9);
    expect(await c.direct.mset(Object.fromEntries(keys.map((key, i) => [key, i])))).toBe("OK");
    expect(await c.direct.mget(...keys, "multi:none")).toEqual([...keys.map((_, i) => i), null]);
    expect(await c.direct.exists(...keys, "multi:none")).toBe(9);
    expect(await c.direct.touch(...keys.slice(0, 5))).toBe(5);
    // DEL and UNLINK carry hash-field deadlines on Redis < 7.4 (a script over each key and its
    // companion), so over several slots they answer CROSSSLOT there (docs/scaling.md).
    for (const key of keys.slice(0, 5)) expect(await c.direct.del(key)).toBe(1);
    expect(await c.direct.exists(...keys)).toBe(4);
  });

  it("answers Redis's CROSSSLOT error for keys in different slots", async () => {
    await c.direct.sadd("x:1", "a");
    await expect(c.direct.sunionstore("x:2", "x:1")).rejects.toThrow(/CROSSSLOT/);
    await expect(c.direct.rename("x:1", "x:2")).rejects.toThrow(/CROSSSLOT/);
    await c.direct.del("x:1");
    await expect(c.direct.eval("return 1", ["x:1", "x:2"], [])).rejects.toThrow(/CROSSSLOT/);
    const tx = c.sdk.multi();
    tx.set("x:1", 1);
    tx.set("x:2", 2);
    await expect(tx.exec()).rejects.toThrow(/CROSSSLOT/);
    // Nothing of the refused transaction ran.
    expect(await c.direct.get("x:1")).toBeNull();
  });

  it("serves the JSON group per slot", async () => {
    for (const key of spreadKeys("doc", 6)) {
      expect(await c.direct.json.set(key, "$", { n: 1, tags: ["a"] })).toBe("OK");
      expect(await c.direct.json.numincrby(key, "$.n", 2)).toEqual([3]);
      expect(await c.direct.json.arrappend(key, "$.tags", '"b"')).toEqual([2]);
      expect(await c.direct.json.get(key)).toEqual({ n: 3, tags: ["a", "b"] });
    }
  });
});
