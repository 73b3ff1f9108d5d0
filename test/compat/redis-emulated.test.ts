import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { useCompat, type Compat } from "./context.js";

/**
 * Commands newer than the harness's Redis 7.0 (XDELEX, XACKDEL, BITOP DIFF/DIFF1/ANDOR/ONE) and
 * behaviours where stashd answers as Upstash does rather than as Redis 7.0 would (XTRIM ~,
 * XREADGROUP NOACK, FCALL_RO, COPY k k), through @upstash/redis.
 */
let c: Compat;
let k: (name: string) => string;

useCompat((ready) => {
  c = ready;
  k = ready.key;
});

async function streamWithGroup(key: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await c.sdk.xadd(key, "*", { i }));
  await c.sdk.xgroup(key, { type: "CREATE", group: "g1", id: "0" });
  await c.sdk.xgroup(key, { type: "CREATE", group: "g2", id: "0" });
  return ids;
}

describe("XDELEX and XACKDEL (emulated)", () => {
  it("XDELEX deletes under KEEPREF, DELREF and ACKED", async () => {
    const { sdk } = c;
    const key = k("xd");
    const [a, b, d] = (await streamWithGroup(key, 3)) as [string, string, string];
    await sdk.xreadgroup("g1", "c", key, ">");
    expect(await sdk.xdelex(key, undefined, a, "9999999999999-0")).toEqual([1, -1]);
    // b: pending in g1, never delivered to g2.
    expect(await sdk.xdelex(key, "ACKED", b)).toEqual([2]);
    expect(await sdk.xdelex(key, "DELREF", b)).toEqual([1]);
    expect(await sdk.xpending(key, "g1", "-", "+", 10)).toEqual([
      [a, "c", expect.any(Number), 1],
      [d, "c", expect.any(Number), 1],
    ]);
    expect(await sdk.xlen(key)).toBe(1);
    expect(await sdk.xdelex(k("none"), undefined, a)).toEqual([-1]);
  });

  it("XACKDEL acknowledges in one group and deletes", async () => {
    const { sdk } = c;
    const key = k("xa");
    const [a, b] = (await streamWithGroup(key, 2)) as [string, string];
    await sdk.xreadgroup("g1", "c", key, ">");
    await sdk.xreadgroup("g2", "c", key, ">");
    expect(await sdk.xackdel(key, "g1", "ACKED", a)).toEqual([2]);
    expect(await sdk.xackdel(key, "g2", "ACKED", a)).toEqual([1]);
    expect(await sdk.xackdel(key, "g1", "DELREF", b, "9999999999999-0")).toEqual([1, -1]);
    expect(await sdk.xpending(key, "g2", "-", "+", 10)).toEqual([]);
    expect(await sdk.xlen(key)).toBe(0);
  });
});

describe("BITOP DIFF, DIFF1, ANDOR, ONE (emulated)", () => {
  it("combines bits as Redis 8.2 documents", async () => {
    const { sdk } = c;
    await sdk.exec(["SET", k("a"), "\u0001\u0003"]);
    await sdk.exec(["SET", k("b"), "\u0002"]);
    const bits = async () => (await sdk.exec(["GET", k("d")])) as string | null;
    expect(await sdk.bitop("diff", k("d"), k("a"), k("b"))).toBe(2);
    expect(await bits()).toBe("\u0001\u0003");
    expect(await sdk.bitop("diff1", k("d"), k("b"), k("a"))).toBe(2);
    expect(await bits()).toBe("\u0001\u0003");
    expect(await sdk.bitop("andor", k("d"), k("a"), k("b"))).toBe(2);
    expect(await bits()).toBe("\u0000\u0000");
    expect(await sdk.bitop("one", k("d"), k("a"), k("b"), k("a"))).toBe(2);
    expect(await bits()).toBe("\u0002\u0000");
    expect(await sdk.bitop("one", k("d"), k("none"))).toBe(0);
    expect(await sdk.exists(k("d"))).toBe(0);
    await expect(sdk.bitop("diff", k("d"), k("a"))).rejects.toThrow(
      "ERR BITOP DIFF must be called with at least two source keys.",
    );
  });
});

describe("behaviours made the same as Upstash's", () => {
  it("XTRIM MAXLEN ~ trims to the threshold", async () => {
    const key = k("trim");
    const p = c.sdk.pipeline();
    for (let i = 0; i < 1000; i++) p.xadd(key, "*", { i });
    await p.exec();
    await c.sdk.xtrim(key, { strategy: "MAXLEN", threshold: 30, exactness: "~" });
    expect(await c.sdk.xlen(key)).toBe(30);
  });

  it("XREADGROUP NOACK leaves nothing pending and no consumer behind", async () => {
    const key = k("noack");
    await streamWithGroup(key, 2);
    const read = (await c.sdk.xreadgroup("g1", "c1", key, ">", { NOACK: true })) as unknown[];
    expect(read).toHaveLength(1);
    expect(await c.sdk.xinfo(key, { type: "CONSUMERS", group: "g1" })).toEqual([]);
    await c.sdk.xreadgroup("g2", "c2", key, ">");
    expect(await c.sdk.xinfo(key, { type: "CONSUMERS", group: "g2" })).toHaveLength(1);
  });

  it("FCALL_RO runs a function that only reads, refuses one that writes", async () => {
    const lib = `#!lua name=emulib
redis.register_function('plain_get', function(keys) return redis.call('GET', keys[1]) end)
redis.register_function('set_value', function(keys, args) return redis.call('SET', keys[1], args[1]) end)`;
    await c.sdk.functions.load({ code: lib, replace: true });
    await c.sdk.set(k("f"), "v");
    expect(await c.sdk.functions.callRo("plain_get", [k("f")])).toBe("v");
    await expect(c.sdk.functions.callRo("set_value", [k("f")], ["w"])).rejects.toThrow(
      "Write commands are not allowed from read-only scripts",
    );
    expect(await c.sdk.get(k("f"))).toBe("v");
    const { url, readonlyToken } = c.stashd.kv;
    const ro = new Redis({ url, token: readonlyToken, enableAutoPipelining: false });
    // The read-only token runs no Lua unless STASHD_KV_READONLY_SCRIPTS is on (threat model).
    await expect(ro.functions.callRo("plain_get", [k("f")])).rejects.toThrow(
      /^NOPERM the read-only token may not run scripts/,
    );
    await expect(ro.functions.call("plain_get", [k("f")])).rejects.toThrow(/^NOPERM .*'fcall'/);
  });

  it("JSONPath recursive descent lists a node's descendants' matches before its own", async () => {
    const { sdk } = c;
    await sdk.json.set(k("j1"), "$", { a: 2, b: 3, nested: { a: 4, b: null } });
    expect(await sdk.json.get(k("j1"), "$..b")).toEqual([null, 3]);
    expect(await sdk.json.get(k("j1"), "$..a", "$..b")).toEqual({
      "$..b": [null, 3],
      "$..a": [4, 2],
    });
    await sdk.json.set(k("j2"), "$", { a: 1, b: 2, nested: { a: 3 }, c: null });
    await sdk.json.set(k("j3"), "$", { a: 4, b: 5, nested: { a: 6 }, c: null });
    expect(await sdk.json.mget([k("j2"), k("j3")], "$..a")).toEqual([
      [3, 1],
      [6, 4],
    ]);
    await sdk.json.set(k("j4"), "$", { a: [3], nested: { a: { b: 2, c: 1 } } });
    expect(await sdk.json.objlen(k("j4"), "$..a")).toEqual([2, null]);
  });

  it("COPY of a key onto itself answers NOT_COPIED", async () => {
    await c.sdk.set(k("same"), "v");
    expect(await c.sdk.copy(k("same"), k("same"))).toBe("NOT_COPIED");
  });
});
