import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { useCompat, type Compat } from "./context.js";

/**
 * Redis 8.8's array commands through @upstash/redis on a Redis without them (the harness's
 * redis-server is 7.0): stashd's array script provides them with Redis's replies, read from
 * Redis's t_array.c and its command docs (docs/compatibility.md, "Arrays").
 */
let c: Compat;
let k: (name: string) => string;

useCompat((ready) => {
  c = ready;
  k = ready.key;
});

const raw = async (...args: (string | number)[]): Promise<unknown> => {
  const res = await c.stashd.kvFetch("/", { method: "POST", body: JSON.stringify(args) });
  return (await res.json()) as unknown;
};

describe("arrays (emulated)", () => {
  it("sets, reads and counts sparse slots as Redis's docs show", async () => {
    const { sdk } = c;
    expect(await sdk.arset(k("events"), 0, "login", "click", "purchase")).toBe(3);
    expect(await sdk.arget(k("events"), 0)).toBe("login");
    expect(await sdk.arget(k("events"), 999)).toBeNull();
    expect(await sdk.arset(k("events"), 1, "tap")).toBe(0);
    expect(await sdk.armset(k("metrics"), { 0: "10", 5: "20", 100: "30" })).toBe(3);
    expect(await sdk.armget(k("metrics"), 0, 5, 100, 999)).toEqual([10, 20, 30, null]);
    await sdk.arset(k("sparse"), 0, "a");
    await sdk.arset(k("sparse"), 1_000_000, "b");
    expect(await sdk.arlen(k("sparse"))).toBe("1000001");
    expect(await sdk.arcount(k("sparse"))).toBe(2);
    expect(await sdk.arlen(k("missing"))).toBe("0");
    expect(await sdk.arcount(k("missing"))).toBe(0);
    expect(await sdk.arget(k("missing"), 3)).toBeNull();
  });

  it("reads ranges with holes, in either direction, and scans only occupied slots", async () => {
    const { sdk } = c;
    await sdk.armset(k("r"), [
      [1, "b"],
      [3, "d"],
      [4, "e"],
    ]);
    expect(await sdk.argetrange(k("r"), 0, 4)).toEqual([null, "b", null, "d", "e"]);
    expect(await sdk.argetrange(k("r"), 4, 2)).toEqual(["e", "d", null]);
    expect(await sdk.argetrange(k("none"), 0, 1)).toEqual([null, null]);
    expect(await sdk.arscan(k("r"), 0, 10)).toEqual([
      ["1", "b"],
      ["3", "d"],
      ["4", "e"],
    ]);
    expect(await sdk.arscan(k("r"), 10, 0, { limit: 2 })).toEqual([
      ["4", "e"],
      ["3", "d"],
    ]);
    expect(await raw("ARGETRANGE", k("r"), 0, 1_000_000)).toEqual({
      error: "ERR range exceeds maximum of 1000000 items",
    });
    expect(await raw("ARSCAN", k("r"), 0, 1, "LIMIT", 0)).toEqual({
      error: "ERR LIMIT must be positive",
    });
  });

  it("deletes slots and ranges, and the key with its last value", async () => {
    const { sdk } = c;
    await sdk.arset(k("d"), 0, "a", "b", "c", "d", "e");
    expect(await sdk.ardel(k("d"), 1, 1, 9)).toBe(1);
    expect(await sdk.ardelrange(k("d"), [4, 3], [0, 0])).toBe(3);
    expect(await sdk.arscan(k("d"), 0, 9)).toEqual([["2", "c"]]);
    expect(await sdk.ardel(k("d"), 2)).toBe(1);
    expect(await sdk.exists(k("d"))).toBe(0);
    expect(await sdk.ardel(k("d"), 2)).toBe(0);
  });

  it("appends at the cursor, moves it, and lists the last items", async () => {
    const { sdk } = c;
    const key = k("log");
    expect(await sdk.arnext(key)).toBe("0");
    expect(await sdk.arseek(key, 5)).toBe(0);
    expect(await sdk.arinsert(key, "a", "b", "c")).toBe("2");
    expect(await sdk.arnext(key)).toBe("3");
    expect(await sdk.arseek(key, 10)).toBe(1);
    expect(await sdk.arinsert(key, "d")).toBe("10");
    expect(await sdk.arlastitems(key, 2)).toEqual([null, "d"]);
    expect(await sdk.arlastitems(key, 2, { rev: true })).toEqual(["d", null]);
    // ARSET never moves the cursor.
    await sdk.arset(key, 50, "far");
    expect(await sdk.arnext(key)).toBe("11");
    expect(await sdk.arinfo(key)).toMatchObject({ count: 5, len: "51", nextInsertIndex: "11" });
    expect(await raw("ARINFO", k("nothing"))).toEqual({ error: "ERR no such key" });
    expect(await raw("ARINFO", key, "FULL")).toMatchObject({
      result: expect.arrayContaining(["avg-sparse-size", "0"]),
    });
  });

  it("keeps a ring of the newest values and reshapes it when its size changes", async () => {
    const { sdk } = c;
    const key = k("ring");
    expect(await sdk.arring(key, 3, "a", "b", "c", "d")).toBe("0");
    expect(await sdk.argetrange(key, 0, 2)).toEqual(["d", "b", "c"]);
    expect(await sdk.arlastitems(key, 3)).toEqual(["b", "c", "d"]);
    expect(await sdk.arring(key, 2, "e")).toBe("0");
    expect(await sdk.argetrange(key, 0, 1)).toEqual(["e", "d"]);
    expect(await sdk.arlen(key)).toBe("2");
    expect(await raw("ARRING", key, 0, "x")).toEqual({ error: "ERR size must be positive" });
    expect(await raw("ARRING", key, "big", "x")).toEqual({ error: "ERR invalid size" });
  });

  it("aggregates a range with AROP", async () => {
    const { sdk } = c;
    const key = k("op");
    await sdk.arset(key, 0, "1", "2", "x", "3.5", "6", "3");
    expect(await sdk.arop(key, 0, 3, "SUM")).toBe(6.5);
    expect(await sdk.arop(key, 0, 5, "min")).toBe(1);
    expect(await sdk.arop(key, 0, 5, "MAX")).toBe(6);
    expect(await sdk.arop(key, 4, 5, "AND")).toBe(2);
    expect(await sdk.arop(key, 4, 5, "OR")).toBe(7);
    expect(await sdk.arop(key, 4, 5, "XOR")).toBe(5);
    expect(await sdk.arop(key, 0, 0, "XOR")).toBe(1);
    expect(await sdk.arop(key, 0, 9, "USED")).toBe(6);
    expect(await sdk.arop(key, 0, 9, { match: "x" })).toBe(1);
    expect(await sdk.arop(key, 2, 2, "SUM")).toBeNull();
    expect(await sdk.arop(k("none"), 0, 9, "SUM")).toBeNull();
    expect(await sdk.arop(k("none"), 0, 9, "USED")).toBe(0);
    expect(await raw("AROP", key, 0, 1, "AVG")).toEqual({ error: "ERR unknown operation" });
    expect(await raw("AROP", key, 0, 1, "MATCH")).toEqual({
      error: "ERR MATCH requires a value argument",
    });
    // Two's complement on 64 bits: -8 AND 255, and a float truncated toward zero.
    await sdk.arset(key, 10, "-8", "255", "-2.9");
    expect(await sdk.arop(key, 10, 11, "AND")).toBe(248);
    expect(await sdk.arop(key, 10, 12, "OR")).toBe(-1);
  });

  it("greps values with EXACT, MATCH and GLOB predicates", async () => {
    const { sdk } = c;
    const key = k("grep");
    await sdk.arset(key, 0, "apple", "Banana", "cherry", "apricot");
    expect(await sdk.argrep(key, "-", "+", { predicates: [{ exact: "apple" }] })).toEqual(["0"]);
    expect(await sdk.argrep(key, 0, 3, { predicates: [{ match: "AN" }], noCase: true })).toEqual([
      "1",
    ]);
    expect(await sdk.argrep(key, "-", "+", { predicates: [{ glob: "a*" }] })).toEqual(["0", "3"]);
    expect(
      await sdk.argrep(key, 3, 0, {
        predicates: [{ glob: "a*" }, { match: "ric" }],
        combine: "AND",
        withValues: true,
      }),
    ).toEqual([["3", "apricot"]]);
    expect(
      await sdk.argrep(key, "-", "+", {
        predicates: [{ glob: "[bc]*" }, { exact: "apple" }],
        limit: 2,
      }),
    ).toEqual(["0", "2"]);
    expect(await sdk.argrep(k("none"), "-", "+", { predicates: [{ exact: "a" }] })).toEqual([]);
    expect(await raw("ARGREP", key, 0, 3, "RE", "^a")).toEqual({
      error: "ERR RE predicates are not supported by stashd's array emulation",
    });
    expect(await raw("ARGREP", key, 0, 3, "LIMIT", 1)).toEqual({ error: "ERR syntax error" });
  });

  it("answers Redis's errors for bad indexes and other types, and its own beyond 2^53", async () => {
    const { sdk } = c;
    expect(await raw("ARGET", k("e"), -1)).toEqual({ error: "ERR invalid array index" });
    expect(await raw("ARSET", k("e"), "18446744073709551615", "x")).toEqual({
      error: "ERR invalid array index",
    });
    expect(await raw("ARSET", k("e"), "18446744073709551614", "x")).toEqual({
      error: "ERR array index beyond 9007199254740991 is not supported by stashd's array emulation",
    });
    expect(await raw("ARMSET", k("e"), 1, "a", 2)).toEqual({
      error: "ERR wrong number of arguments for 'armset' command",
    });
    expect(await raw("ARGET", k("e"))).toEqual({
      error: "ERR wrong number of arguments for 'arget' command",
    });
    await sdk.set(k("str"), "v");
    await sdk.zadd(k("zs"), { score: 1, member: "m" });
    for (const key of [k("str"), k("zs")]) {
      expect(await raw("ARGET", key, 0)).toEqual({
        error: "WRONGTYPE Operation against a key holding the wrong kind of value",
      });
      expect(await raw("ARSET", key, 0, "x")).toEqual({
        error: "WRONGTYPE Operation against a key holding the wrong kind of value",
      });
    }
    expect(await sdk.arset(k("e"), "007", "leading zeros")).toBe(1);
    expect(await sdk.arget(k("e"), 7)).toBe("leading zeros");
  });

  it("lets the read-only token read arrays and never write them", async () => {
    await c.sdk.arset(k("ro"), 0, "a", "b");
    const { url, readonlyToken } = c.stashd.kv;
    const ro = new Redis({ url, token: readonlyToken, enableAutoPipelining: false });
    expect(await ro.arget(k("ro"), 1)).toBe("b");
    expect(await ro.arscan(k("ro"), 0, 9)).toEqual([
      ["0", "a"],
      ["1", "b"],
    ]);
    await expect(ro.arset(k("ro"), 2, "c")).rejects.toThrow(/NOPERM/);
    await expect(ro.arinsert(k("ro"), "c")).rejects.toThrow(/NOPERM/);
    expect(await c.sdk.arcount(k("ro"))).toBe(2);
  });

  it("runs inside /pipeline and /multi-exec", async () => {
    const p = c.sdk.multi();
    p.arset(k("tx"), 0, "a");
    p.arinsert(k("tx"), "b");
    p.argetrange(k("tx"), 0, 1);
    expect(await p.exec()).toEqual([1, "0", ["b", null]]);
    const q = c.sdk.pipeline();
    q.arlen(k("tx"));
    q.arget(k("tx"), 0);
    expect(await q.exec()).toEqual(["1", "b"]);
  });
});
