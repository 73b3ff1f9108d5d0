import { readDataSize } from "../../src/admin/console/kv-data-size.js";
import { textOf } from "../../src/shared/redis/cluster/commands.js";
import { BackendFactory } from "../../src/shared/redis/cluster/factory.js";
import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { useCluster, spreadKeys, type ClusterContext } from "./context.js";

let c: ClusterContext;
useCluster((ready) => (c = ready));

const LIB = `#!lua name=clusterlib
redis.register_function('bump', function(keys, args) return redis.call('INCRBY', keys[1], args[1]) end)
redis.register_function{function_name='peek', callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}}`;

describe("KV on a Redis Cluster: commands spanning the keyspace", () => {
  it("fans out DBSIZE, KEYS, SCAN, RANDOMKEY and FLUSHDB over every master", async () => {
    await c.direct.flushdb();
    const keys = spreadKeys("space", 50);
    await Promise.all(keys.map((key) => c.sdk.set(key, 1)));
    expect(await c.direct.dbsize()).toBe(50);
    expect((await c.direct.keys("space:*")).sort()).toEqual([...keys].sort());

    const seen: string[] = [];
    let cursor: string | number = 0;
    do {
      const [next, batch]: [string | number, string[]] = await c.direct.scan(cursor, {
        match: "space:*",
        count: 7,
      });
      seen.push(...batch);
      cursor = next;
    } while (String(cursor) !== "0");
    expect(seen.sort()).toEqual([...keys].sort());
    expect(keys).toContain(await c.direct.randomkey());

    expect(await c.direct.flushdb()).toBe("OK");
    expect(await c.direct.dbsize()).toBe(0);
    expect(await c.direct.randomkey()).toBeNull();
    for (const port of await c.masters()) {
      expect(await c.node(port, ["DBSIZE"])).toEqual({ kind: "int", value: "0" });
    }
  });

  it("sums the console's data size (INFO memory) over every master; no limit while one has none", async () => {
    const masters = await c.masters();
    const endpoint = { host: "127.0.0.1", port: masters[0] as number };
    const factory = new BackendFactory(endpoint, { connectTimeoutMs: 2000, failoverWindowMs: 0 });
    const admin = factory.open(endpoint, { size: 1, connectTimeoutMs: 2000, retryBackoffMs: 20 });
    const setLimit = (port: number, bytes: number) =>
      c.node(port, ["CONFIG", "SET", "maxmemory", String(bytes)]);
    const usedOn = async (port: number) =>
      Number(/^used_memory:(\d+)/m.exec(textOf(await c.node(port, ["INFO", "memory"])) ?? "")?.[1]);
    try {
      await Promise.all(masters.map((port, i) => setLimit(port, (i + 1) * 100 * 1024 * 1024)));
      const size = await readDataSize(admin);
      expect(size.limit).toBe(600 * 1024 * 1024);
      const each = await Promise.all(masters.map(usedOn));
      const sum = each.reduce((a, b) => a + b, 0);
      // Every master counted once (each uses about the same; their memory moves a little).
      expect(size.used).toBeGreaterThan(sum * 0.9);
      expect(size.used).toBeLessThan(sum * 1.1);
      await setLimit(masters[1] as number, 0);
      expect((await readDataSize(admin)).limit).toBeNull();
    } finally {
      await Promise.all(masters.map((port) => setLimit(port, 0)));
      await admin.close();
    }
  });

  it("loads scripts and functions on every node, so EVALSHA and FCALL work on any key", async () => {
    const sha = await c.direct.scriptLoad("return redis.call('INCR', KEYS[1])");
    const keys = spreadKeys("sha", 12);
    for (const key of keys) expect(await c.direct.evalsha(sha, [key], [])).toBe(1);
    expect(await c.direct.scriptExists(sha, "0".repeat(40))).toEqual([1, 0]);

    expect(await c.direct.functions.load({ code: LIB, replace: true })).toBe("clusterlib");
    for (const key of keys) {
      expect(await c.direct.functions.call("bump", [key], ["5"])).toBe(6);
      expect(await c.direct.functions.callRo("peek", [key])).toBe(6);
    }
  });

  it("enforces the read-only token on every node", async () => {
    const keys = spreadKeys("ro", 12);
    await Promise.all(keys.map((key) => c.sdk.set(key, "v")));
    for (const key of keys) {
      expect(await c.readonly.get(key)).toBe("v");
      await expect(c.readonly.set(key, "w")).rejects.toThrow(/NOPERM/);
    }
    // Every node (replicas too, for failovers) knows the read-only user.
    for (const port of c.cluster.ports) {
      const users = await c.node(port, ["ACL", "USERS"]);
      const names = users.kind === "array" ? users.value.map(textOf) : [];
      expect(names).toContain("default_ro");
    }
  });

  it("creates ACL users on every node and serves their tokens everywhere", async () => {
    const created = await c.direct.exec([
      "ACL",
      "SETUSER",
      "reader",
      "on",
      ">reader-pass",
      "~*",
      "+get",
      "+ping",
    ]);
    expect(created).toBe("OK");
    const token = await c.direct.exec<string>(["ACL", "RESTTOKEN", "reader", "reader-pass"]);
    const reader = new Redis({ url: c.stashd.kv.url, token, enableAutoPipelining: false });
    for (const key of spreadKeys("acl", 9)) {
      await c.sdk.set(key, "x");
      expect(await reader.get(key)).toBe("x");
      await expect(reader.set(key, "y")).rejects.toThrow(/NOPERM/);
    }
  });

  it("streams pub/sub messages over SSE", async () => {
    const got: unknown[] = [];
    const sub = c.sdk.subscribe<unknown>(["news"]);
    sub.on("message", (m) => got.push(m.message));
    const counts: number[] = [];
    sub.on("subscribe", (n) => counts.push(n));
    await eventually(() => expect(counts).toEqual([1]));
    expect(await c.sdk.publish("news", "hello")).toBe(1);
    await eventually(() => expect(got).toEqual(["hello"]));
    await sub.unsubscribe();
  });
});
