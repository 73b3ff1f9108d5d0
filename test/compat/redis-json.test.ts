import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCompat, type Compat } from "./context.js";

/** `redis.json.*` of @upstash/redis against stashd on a Redis without the JSON module. */
let c: Compat;
let k: (name: string) => string;

beforeAll(async () => {
  c = await startCompat();
  k = c.key;
});
afterAll(async () => {
  await c?.stop();
});

const doc = {
  name: "stashd",
  n: 1,
  price: 2.5,
  tags: ["kv", "queue"],
  nested: { on: true, list: [{ id: 1 }, { id: 2 }], empty: null },
};

describe("redis.json.* (JSONPath and legacy paths)", () => {
  it("sets and gets documents, keeping key order", async () => {
    expect(await c.sdk.json.set(k("doc"), "$", doc)).toBe("OK");
    expect(await c.sdk.json.get(k("doc"))).toEqual(doc);
    expect(Object.keys((await c.sdk.json.get(k("doc"))) as object)).toEqual(Object.keys(doc));
    expect(await c.sdk.json.get(k("doc"), "$.nested.list[*].id")).toEqual([1, 2]);
    expect(await c.sdk.json.get(k("doc"), ".nested.list[1]")).toEqual({ id: 2 });
    expect(await c.sdk.json.get(k("doc"), "$.missing")).toEqual([]);
    await expect(c.sdk.json.get(k("doc"), ".missing")).rejects.toThrow(
      "ERR Path '$.missing' does not exist",
    );
    expect(await c.sdk.json.get(k("none"))).toBeNull();
    expect(await c.direct.json.get(k("doc"), { indent: " ", newline: "\n" }, "$.n")).toEqual([1]);
    expect(await c.sdk.type(k("doc"))).toBe("string");
  });

  it("refuses a set below a parent that does not exist, as Upstash does", async () => {
    // upstash-redis-py's test_set_nonexisting_path expects an error here.
    await c.sdk.json.set(k("np"), "$", { int: 1 });
    await expect(c.sdk.json.set(k("np"), "$.nonexisting_key.str", '"test"')).rejects.toThrow(
      "ERR missing key at non-terminal path level",
    );
    expect(await c.sdk.json.get(k("np"))).toEqual({ int: 1 });
    expect(await c.sdk.json.set(k("np"), "$.str", '"test"')).toBe("OK");
  });

  it("honours NX and XX", async () => {
    expect(await c.sdk.json.set(k("nx"), "$", { a: 1 }, { xx: true })).toBeNull();
    expect(await c.sdk.json.set(k("nx"), "$", { a: 1 }, { nx: true })).toBe("OK");
    expect(await c.sdk.json.set(k("nx"), "$.a", 2, { nx: true })).toBeNull();
    expect(await c.sdk.json.set(k("nx"), "$.b", 2, { nx: true })).toBe("OK");
    expect(await c.sdk.json.set(k("nx"), ".c", 3, { xx: true })).toBeNull();
    expect(await c.sdk.json.get(k("nx"))).toEqual({ a: 1, b: 2 });
    await expect(c.sdk.json.set(k("nx2"), "$.a", 1)).rejects.toThrow(
      "new objects must be created at the root",
    );
  });

  it("edits numbers, strings, booleans and types", async () => {
    await c.sdk.json.set(k("w"), "$", doc);
    expect(await c.sdk.json.numincrby(k("w"), "$.n", 2)).toEqual([3]);
    expect(await c.sdk.json.numincrby(k("w"), "$..price", 0.25)).toEqual([2.75]);
    expect(await c.sdk.json.nummultby(k("w"), "$.n", 10)).toEqual([30]);
    expect(await c.sdk.json.numincrby(k("w"), "$.name", 1)).toEqual([null]);
    expect(await c.sdk.json.strappend(k("w"), "$.name", '"!"')).toEqual([7]);
    expect(await c.sdk.json.strlen(k("w"), "$.name")).toEqual([7]);
    expect(await c.sdk.json.toggle(k("w"), "$.nested.on")).toEqual([0]);
    expect(await c.sdk.json.type(k("w"), "$.nested.*")).toEqual(["boolean", "array", null]);
    // The SDK parses each reply string as JSON, so the type name "null" arrives as null.
    expect(await c.sdk.json.type(k("w"), ".price")).toBe("number");
    await expect(c.sdk.json.numincrby(k("w"), ".name", 1)).rejects.toThrow(
      "ERR Path '$.name' does not exist or does not contains a number",
    );
  });

  it("edits arrays", async () => {
    await c.sdk.json.set(k("a"), "$", { l: [1, 2, 3], o: {} });
    expect(await c.sdk.json.arrappend(k("a"), "$.l", 4, 5)).toEqual([5]);
    expect(await c.sdk.json.arrinsert(k("a"), "$.l", 0, 0)).toEqual([6]);
    expect(await c.sdk.json.arrindex(k("a"), "$.l", 3)).toEqual([3]);
    expect(await c.sdk.json.arrlen(k("a"), "$.*")).toEqual([6, null]);
    expect(await c.sdk.json.arrpop(k("a"), "$.l")).toEqual([5]);
    expect(await c.sdk.json.arrpop(k("a"), "$.l", 0)).toEqual([0]);
    expect(await c.sdk.json.arrtrim(k("a"), "$.l", 1, 2)).toEqual([2]);
    expect(await c.sdk.json.get(k("a"), "$.l")).toEqual([[2, 3]]);
    await expect(c.sdk.json.arrappend(k("a"), ".o", 1)).rejects.toThrow("not an array");
  });

  it("reads objects, clears, merges, deletes and answers RESP", async () => {
    await c.sdk.json.set(k("o"), "$", { a: { x: 1, y: 2 }, b: [1], s: "v" });
    expect(await c.sdk.json.objkeys(k("o"), "$.a")).toEqual([["x", "y"]]);
    expect(await c.sdk.json.objlen(k("o"), "$.*")).toEqual([2, null, null]);
    expect(await c.sdk.json.resp(k("o"), "$.a")).toEqual([["{", "x", 1, "y", 2]]);
    expect(await c.sdk.json.merge(k("o"), "$", { a: { x: null, z: 3 }, s: null })).toBe("OK");
    expect(await c.sdk.json.get(k("o"))).toEqual({ a: { y: 2, z: 3 }, b: [1] });
    expect(await c.sdk.json.clear(k("o"), "$.*")).toBe(2);
    expect(await c.sdk.json.get(k("o"))).toEqual({ a: {}, b: [] });
    expect(await c.sdk.json.forget(k("o"), "$.b")).toBe(1);
    expect(await c.sdk.json.del(k("o"), "$.nothing")).toBe(0);
    expect(await c.sdk.json.del(k("o"))).toBe(1);
    expect(await c.sdk.exists(k("o"))).toBe(0);
  });

  it("sets and gets several keys", async () => {
    // json.mset is typed as taking one array but sends its (spread) arguments; call it as sent.
    type Item = { key: string; path: string; value: unknown };
    const mset = c.sdk.json.mset as unknown as (...items: Item[]) => Promise<unknown>;
    const items = [
      { key: k("m1"), path: "$", value: { v: 1 } },
      { key: k("m2"), path: "$", value: { v: "two" } },
    ];
    expect(await mset(...items)).toBe("OK");
    expect(await c.sdk.json.mget([k("m1"), k("m2"), k("m3")], "$.v")).toEqual([[1], ["two"], null]);
    expect(await c.sdk.json.mget([k("m1"), k("m2")], ".v")).toEqual([1, "two"]);
  });
});

describe("redis.json.* in pipelines, transactions, with the read-only token", () => {
  it("runs inside a pipeline and a transaction", async () => {
    const p = c.sdk.pipeline();
    p.json.set(k("p"), "$", { n: 0, l: [] });
    p.json.numincrby(k("p"), "$.n", 5);
    p.json.arrappend(k("p"), "$.l", '"x"');
    p.json.get(k("p"));
    expect(await p.exec()).toEqual(["OK", [5], [1], { n: 5, l: ["x"] }]);
    const m = c.sdk.multi();
    m.json.nummultby(k("p"), "$.n", 2);
    m.json.arrpop(k("p"), "$.l");
    m.json.get(k("p"), "$.n");
    expect(await m.exec()).toEqual([[10], ["x"], [10]]);
  });

  it("reads with the read-only token and refuses its writes", async () => {
    await c.sdk.json.set(k("ro"), "$", { a: [1, 2] });
    const ro = new Redis({ url: c.stashd.kv.url, token: c.stashd.kv.readonlyToken });
    expect(await ro.json.get(k("ro"), "$.a")).toEqual([[1, 2]]);
    expect(await ro.json.arrlen(k("ro"), "$.a")).toEqual([2]);
    expect(await ro.json.mget([k("ro")], "$.a[0]")).toEqual([[1]]);
    await expect(ro.json.set(k("ro"), "$.a", 1)).rejects.toThrow(/NOPERM.*json\.set/);
    expect(await c.sdk.json.get(k("ro"))).toEqual({ a: [1, 2] });
  });

  it("keeps working after SCRIPT FLUSH", async () => {
    await c.sdk.json.set(k("flush"), "$", [1]);
    await c.sdk.scriptFlush();
    expect(await c.sdk.json.arrappend(k("flush"), "$", 2)).toEqual([2]);
    await c.sdk.scriptFlush();
    const p = c.sdk.pipeline();
    p.json.arrlen(k("flush"));
    p.json.get(k("flush"));
    expect(await p.exec()).toEqual([[2], [1, 2]]);
  });

  it("loses no update under 50 parallel increments", async () => {
    await c.sdk.json.set(k("count"), "$", { n: 0 });
    await Promise.all(
      Array.from({ length: 50 }, () => c.direct.json.numincrby(k("count"), "$.n", 1)),
    );
    expect(await c.sdk.json.get(k("count"), "$.n")).toEqual([50]);
  });
});
