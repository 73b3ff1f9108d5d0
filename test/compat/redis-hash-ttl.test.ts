import { describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { useCompat, type Compat } from "./context.js";

/**
 * Hash-field expiration and HGETEX/HSETEX/HGETDEL through @upstash/redis on a Redis without
 * them (the harness's redis-server is 7.0): stashd's hash script provides them.
 */
let c: Compat;
let k: (name: string) => string;

useCompat((ready) => {
  c = ready;
  k = ready.key;
});

describe("hash-field expiration (emulated)", () => {
  it("sets, reads and removes field TTLs with Redis's reply codes", async () => {
    const { sdk } = c;
    await sdk.hset(k("h1"), { a: 1, b: 2 });
    expect(await sdk.hexpire(k("h1"), ["a", "b", "zz"], 100)).toEqual([1, 1, -2]);
    expect(await sdk.hexpire(k("h1"), "a", 50, "NX")).toEqual([0]);
    expect(await sdk.hexpire(k("h1"), "a", 50, "GT")).toEqual([0]);
    expect(await sdk.hexpire(k("h1"), "a", 50, "LT")).toEqual([1]);
    const [ttl] = await sdk.httl(k("h1"), "a");
    expect(ttl).toBeGreaterThan(45);
    expect(ttl).toBeLessThanOrEqual(50);
    expect((await sdk.hpttl(k("h1"), "b"))[0]).toBeGreaterThan(99_000);
    const [at] = await sdk.hexpiretime(k("h1"), "a");
    expect(Math.abs((at as number) - (Date.now() / 1000 + 50))).toBeLessThan(3);
    expect(await sdk.hpersist(k("h1"), ["a", "zz"])).toEqual([1, -2]);
    expect(await sdk.httl(k("h1"), ["a", "b", "zz"])).toEqual([-1, expect.any(Number), -2]);
    expect(await sdk.hpersist(k("h1"), "a")).toEqual([-1]);
    expect(await sdk.httl(k("missing"), "a")).toEqual([-2]);
  });

  it("answers HEXPIRETIME in whole seconds, floored, as Upstash does", async () => {
    // upstash-redis-py's test_hexpiretime_returns_correct_expiry: after HEXPIRE 5, HEXPIRETIME
    // must not pass int(time.time()) + 5 (Redis rounds up: a second past).
    const { sdk } = c;
    const key = k("hxt");
    await sdk.hset(key, { a: 1, b: 2, c: 3 });
    const at = 4_102_444_800; // 2100-01-01, whole seconds
    expect(await sdk.hexpireat(key, "a", at)).toEqual([1]);
    expect(await sdk.hexpiretime(key, "a")).toEqual([at]);
    expect(await sdk.hpexpiretime(key, "a")).toEqual([at * 1000]);
    expect(await sdk.hpexpireat(key, "b", at * 1000 + 999)).toEqual([1]);
    expect(await sdk.hexpiretime(key, "b")).toEqual([at]);
    expect(await sdk.hpexpiretime(key, "b")).toEqual([at * 1000 + 999]);
    const before = Math.floor(Date.now() / 1000);
    expect(await sdk.hexpire(key, "c", 5)).toEqual([1]);
    const [got] = await sdk.hexpiretime(key, "c");
    expect(got).toBeGreaterThanOrEqual(before + 5);
    expect(got).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 5);
    // HTTL keeps Redis's rounding up: a field set to 5 s answers 5 right after.
    expect(await sdk.httl(key, "c")).toEqual([5]);
  });

  it("hides a field past its deadline from every hash read", async () => {
    const { sdk } = c;
    const key = k("h2");
    await sdk.hset(key, { keep: "x", gone: "y" });
    expect(await sdk.hpexpire(key, "gone", 50)).toEqual([1]);
    await eventually(async () => expect(await sdk.hget(key, "gone")).toBeNull());
    expect(await sdk.hgetall(key)).toEqual({ keep: "x" });
    expect(await sdk.hmget(key, "keep", "gone")).toEqual({ keep: "x", gone: null });
    expect(await sdk.hlen(key)).toBe(1);
    expect(await sdk.hkeys(key)).toEqual(["keep"]);
    expect(await sdk.hvals(key)).toEqual(["x"]);
    expect(await sdk.hexists(key, "gone")).toBe(0);
    expect(await sdk.hstrlen(key, "gone")).toBe(0);
    expect(await sdk.hscan(key, 0)).toEqual(["0", ["keep", "x"]]);
    expect(await sdk.hrandfield(key, 5)).toEqual(["keep"]);
    expect(await sdk.hrandfield(key, 2, true)).toEqual({ keep: "x" });
    expect(await sdk.hrandfield(key)).toBe("keep");
    expect(await sdk.httl(key, "gone")).toEqual([-2]);
    // A write deletes the expired field for good: HINCRBY starts from 0.
    expect(await sdk.hincrby(key, "gone", 5)).toBe(5);
    expect(await sdk.httl(key, "gone")).toEqual([-1]);
  });

  it("drops a field's TTL when HSET overwrites it, keeps it through HINCRBY", async () => {
    const { sdk } = c;
    const key = k("h3");
    await sdk.hset(key, { a: 1, b: 2 });
    await sdk.hexpire(key, ["a", "b"], 100);
    await sdk.hset(key, { a: 3 });
    expect(await sdk.httl(key, "a")).toEqual([-1]);
    await sdk.hincrby(key, "b", 1);
    expect((await sdk.httl(key, "b"))[0]).toBeGreaterThan(90);
    await sdk.hdel(key, "b");
    await sdk.hset(key, { b: 1 });
    expect(await sdk.httl(key, "b")).toEqual([-1]);
  });

  it("deletes the hash when its last field expires, and forgets old TTLs after DEL", async () => {
    const { sdk } = c;
    const key = k("h4");
    await sdk.hset(key, { only: 1 });
    expect(await sdk.hexpire(key, "only", 0)).toEqual([2]);
    expect(await sdk.exists(key)).toBe(0);
    await sdk.hset(key, { f: 1 });
    await sdk.hpexpire(key, "f", 100_000);
    await sdk.del(key);
    await sdk.hset(key, { f: 2 });
    expect(await sdk.httl(key, "f")).toEqual([-1]);
  });

  it("carries TTLs through RENAME and COPY", async () => {
    const { sdk } = c;
    await sdk.hset(k("src"), { a: 1, b: 2 });
    await sdk.hpexpire(k("src"), "a", 60);
    await sdk.rename(k("src"), k("dst"));
    await eventually(async () => expect(await sdk.hgetall(k("dst"))).toEqual({ b: 2 }));
    await sdk.hexpire(k("dst"), "b", 100);
    expect(await sdk.copy(k("dst"), k("copy"))).toBe("COPIED");
    expect((await sdk.httl(k("copy"), "b"))[0]).toBeGreaterThan(90);
    expect(await sdk.copy(k("copy"), k("copy"))).toBe("NOT_COPIED");
  });

  it("refuses malformed calls with Redis's errors", async () => {
    const { direct } = c;
    await direct.hset(k("h5"), { a: 1 });
    const run = async (...args: (string | number)[]) => {
      const res = await c.stashd.kvFetch("/", { method: "POST", body: JSON.stringify(args) });
      return (await res.json()) as unknown;
    };
    expect(await run("HEXPIRE", k("h5"), 10, "FIELDS", 2, "a")).toEqual({
      error: "ERR The `numfields` parameter must match the number of arguments",
    });
    expect(await run("HEXPIRE", k("h5"), -1, "FIELDS", 1, "a")).toEqual({
      error: "ERR invalid expire time, must be >= 0",
    });
    expect(await run("HEXPIRE", k("h5"), 10, "FIELDS", 0, "a")).toEqual({
      error: "ERR Parameter `numFields` should be greater than 0",
    });
    expect(await run("HTTL", k("h5"), "FIELD", 1, "a")).toEqual({
      error: "ERR Mandatory argument FIELDS is missing or not at the right position",
    });
    expect(await run("HEXPIRE", k("h5"), 10, "FIELDS")).toEqual({
      error: "ERR wrong number of arguments for 'hexpire' command",
    });
    await direct.set(k("str"), "x");
    expect(await run("HTTL", k("str"), "FIELDS", 1, "a")).toEqual({
      error: "WRONGTYPE Operation against a key holding the wrong kind of value",
    });
    expect(await run("HGET", k("str"), "a")).toEqual({
      error: "WRONGTYPE Operation against a key holding the wrong kind of value",
    });
    expect(await run("HGET", k("h5"))).toEqual({
      error: "ERR wrong number of arguments for 'hget' command",
    });
  });
});

describe("field TTLs and the other hash and key commands", () => {
  const companion = (key: string) => `stashd:hfe{${key}}`;

  it("DEL, UNLINK and key expiry take the deadlines with the hash", async () => {
    const { sdk } = c;
    await sdk.hset(k("d1"), { a: 1 });
    await sdk.hset(k("d2"), { a: 1 });
    await sdk.hexpire(k("d1"), "a", 100);
    await sdk.hexpire(k("d2"), "a", 100);
    expect(await sdk.exists(companion(k("d1")), companion(k("d2")))).toBe(2);
    expect(await sdk.del(k("d1"), k("nothing"))).toBe(1);
    expect(await sdk.unlink(k("d2"))).toBe(1);
    expect(await sdk.exists(companion(k("d1")), companion(k("d2")))).toBe(0);

    await sdk.hset(k("e1"), { a: 1, b: 2 });
    await sdk.hexpire(k("e1"), "a", 100);
    expect(await sdk.pexpire(k("e1"), 60_000)).toBe(1);
    expect(await sdk.pttl(companion(k("e1")))).toBeGreaterThan(50_000);
    expect(await sdk.persist(k("e1"))).toBe(1);
    expect(await sdk.pttl(companion(k("e1")))).toBe(-1);
    await sdk.pexpire(k("e1"), 30);
    await eventually(async () => expect(await sdk.exists(k("e1"), companion(k("e1")))).toBe(0));
    await sdk.hset(k("e1"), { a: 1 });
    expect(await sdk.httl(k("e1"), "a")).toEqual([-1]);
  });

  it("a hash replaced by another type answers WRONGTYPE, and a new hash starts clean", async () => {
    const { sdk } = c;
    await sdk.hset(k("t1"), { a: 1 });
    await sdk.hexpire(k("t1"), "a", 100);
    await sdk.set(k("t1"), "now a string");
    await expect(sdk.hget(k("t1"), "a")).rejects.toThrow("WRONGTYPE");
    await expect(sdk.httl(k("t1"), "a")).rejects.toThrow("WRONGTYPE");
    await sdk.set(k("t1"), "x", { px: 1 });
    await eventually(async () => expect(await sdk.exists(k("t1"))).toBe(0));
    expect(await sdk.hsetnx(k("t1"), "a", 2)).toBe(1);
    expect(await sdk.httl(k("t1"), "a")).toEqual([-1]);
  });

  it("HSETNX, HSCAN MATCH and HRANDFIELD with a negative count skip expired fields", async () => {
    const { sdk } = c;
    const key = k("s1");
    await sdk.hset(key, { a1: 1, a2: 2, b1: 3 });
    await sdk.hpexpire(key, ["a1", "b1"], 20);
    await eventually(async () => expect(await sdk.hlen(key)).toBe(1));
    expect(await sdk.hscan(key, 0, { match: "a*" })).toEqual(["0", ["a2", 2]]);
    expect(await sdk.hrandfield(key, -5)).toEqual(["a2", "a2", "a2", "a2", "a2"]);
    expect(await sdk.hsetnx(key, "a1", 9)).toBe(1);
    expect(await sdk.hgetall(key)).toEqual({ a1: 9, a2: 2 });
  });

  it("RENAMENX onto an existing key keeps both hashes' deadlines where they were", async () => {
    const { sdk } = c;
    await sdk.hset(k("r1"), { a: 1 });
    await sdk.hset(k("r2"), { b: 1 });
    await sdk.hexpire(k("r1"), "a", 100);
    await sdk.hexpire(k("r2"), "b", 200);
    expect(await sdk.renamenx(k("r1"), k("r2"))).toBe(0);
    expect((await sdk.httl(k("r1"), "a"))[0]).toBeLessThanOrEqual(100);
    expect((await sdk.httl(k("r2"), "b"))[0]).toBeGreaterThan(100);
    expect(await sdk.renamenx(k("r1"), k("r3"))).toBe(1);
    expect((await sdk.httl(k("r3"), "a"))[0]).toBeGreaterThan(90);
    expect(await sdk.exists(companion(k("r1")))).toBe(0);
  });
});

describe("HGETEX, HSETEX, HGETDEL (emulated)", () => {
  it("HSETEX sets values with a TTL under FNX/FXX, KEEPTTL keeps TTLs", async () => {
    const { sdk } = c;
    const key = k("sx");
    expect(await sdk.hsetex(key, { conditional: "FXX" }, { a: 1 })).toBe(0);
    expect(await sdk.exists(key)).toBe(0);
    expect(await sdk.hsetex(key, { conditional: "FNX", expiration: { ex: 100 } }, { a: 1 })).toBe(
      1,
    );
    expect(await sdk.hsetex(key, { conditional: "FNX" }, { a: 2, b: 2 })).toBe(0);
    expect(await sdk.hget(key, "a")).toBe(1);
    expect((await sdk.httl(key, "a"))[0]).toBeGreaterThan(90);
    expect(await sdk.hsetex(key, { expiration: { keepttl: true } }, { a: 3 })).toBe(1);
    expect((await sdk.httl(key, "a"))[0]).toBeGreaterThan(90);
    expect(await sdk.hsetex(key, {}, { a: 4 })).toBe(1);
    expect(await sdk.httl(key, "a")).toEqual([-1]);
    expect(await sdk.hsetex(key, { expiration: { pxat: 1 } }, { a: 5 })).toBe(1);
    expect(await sdk.exists(key)).toBe(0);
  });

  it("HGETEX reads and sets, persists or ends TTLs; HGETDEL reads and deletes", async () => {
    const { sdk } = c;
    const key = k("gx");
    await sdk.hset(key, { a: "x", b: "y" });
    expect(await sdk.hgetex(key, { ex: 100 }, "a", "zz")).toEqual({ a: "x", zz: null });
    expect((await sdk.httl(key, "a"))[0]).toBeGreaterThan(90);
    expect(await sdk.hgetex(key, { persist: true }, "a")).toEqual({ a: "x" });
    expect(await sdk.httl(key, "a")).toEqual([-1]);
    expect(await sdk.hgetex(key, { pxat: 1 }, "a")).toEqual({ a: "x" });
    expect(await sdk.hgetall(key)).toEqual({ b: "y" });
    expect(await sdk.hgetex(k("none"), { ex: 1 }, "a")).toBeNull();
    expect(await sdk.hgetdel(key, "b", "zz")).toEqual({ b: "y", zz: null });
    expect(await sdk.exists(key)).toBe(0);
  });

  it("answer Redis 8's errors", async () => {
    const run = async (...args: (string | number)[]) => {
      const res = await c.stashd.kvFetch("/", { method: "POST", body: JSON.stringify(args) });
      return ((await res.json()) as { error?: string }).error;
    };
    expect(await run("HSETEX", k("e"), "FNX", "FXX", "FIELDS", 1, "a", "b")).toBe(
      "ERR Only one of FXX or FNX arguments can be specified",
    );
    expect(await run("HSETEX", k("e"), "EX", 1, "KEEPTTL", "FIELDS", 1, "a", "b")).toBe(
      "ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified",
    );
    expect(await run("HSETEX", k("e"), "FIELDS", 2, "a", "b")).toBe(
      "ERR wrong number of arguments for 'hsetex' command",
    );
    expect(await run("HSETEX", k("e"), "FIELDS", 0, "a", "b")).toBe("ERR invalid number of fields");
    expect(await run("HSETEX", k("e"), "NX", "FIELDS", 1, "a", "b")).toBe("ERR unknown argument");
    expect(await run("HGETEX", k("e"), "PERSIST", 1, "FIELDS", 1, "a")).toBe(
      "ERR Mandatory argument FIELDS is missing or not at the right position",
    );
    expect(await run("HGETEX", k("e"), "FIELDS", -1, "a")).toBe(
      "ERR Number of fields must be a positive integer",
    );
    expect(await run("HGETEX", k("e"), "PX", -1, "FIELDS", 1, "a")).toBe(
      "ERR invalid expire time, must be >= 0",
    );
    expect(await run("HGETEX", k("e"), "EX", "bla", "FIELDS", 1, "a")).toBe(
      "ERR value is not an integer or out of range",
    );
    expect(await run("HGETDEL", k("e"), "FIELDS", 2, "a")).toBe(
      "ERR The `numfields` parameter must match the number of arguments",
    );
  });
});
