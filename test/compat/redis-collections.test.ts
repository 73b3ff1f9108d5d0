import { describe, expect, it } from "vitest";
import { useCompat, type Compat } from "./context.js";

let c: Compat;
let k: (name: string) => string;

useCompat((ready) => {
  c = ready;
  k = ready.key;
});

describe("@upstash/redis hashes", () => {
  it("writes and reads fields", async () => {
    const { sdk } = c;
    expect(await sdk.hset(k("h"), { name: "ada", age: 36, tags: ["x", "y"] })).toBe(3);
    expect(await sdk.hget(k("h"), "name")).toBe("ada");
    expect(await sdk.hgetall(k("h"))).toEqual({ name: "ada", age: 36, tags: ["x", "y"] });
    expect(await sdk.hgetall(k("nohash"))).toBeNull();
    expect(await sdk.hmget(k("h"), "name", "missing")).toEqual({ name: "ada", missing: null });
    expect(await sdk.hmset(k("h"), { city: "London" })).toBe("OK");
    expect(await sdk.hsetnx(k("h"), "city", "Paris")).toBe(0);
    expect(await sdk.hexists(k("h"), "city")).toBe(1);
    expect(await sdk.hlen(k("h"))).toBe(4);
    expect((await sdk.hkeys(k("h"))).sort()).toEqual(["age", "city", "name", "tags"]);
    expect(await sdk.hstrlen(k("h"), "city")).toBe(6);
    expect(await sdk.hincrby(k("h"), "age", 1)).toBe(37);
    expect(await sdk.hincrbyfloat(k("h"), "age", 0.5)).toBe(37.5);
    expect(await sdk.hdel(k("h"), "tags", "city")).toBe(2);
    expect((await sdk.hvals(k("h"))).sort()).toEqual([37.5, "ada"].sort());
  });

  it("samples and scans fields", async () => {
    const { sdk } = c;
    await sdk.hset(k("hs"), { a: "1", b: "2" });
    expect(["a", "b"]).toContain(await sdk.hrandfield(k("hs")));
    expect((await sdk.hrandfield(k("hs"), 2)).sort()).toEqual(["a", "b"]);
    expect(await sdk.hrandfield(k("hs"), 2, true)).toEqual({ a: 1, b: 2 });
    const [cursor, flat] = await sdk.hscan(k("hs"), 0, { match: "*" });
    expect(cursor).toBe("0");
    expect(flat).toEqual(["a", 1, "b", 2]);
  });
});

describe("@upstash/redis lists", () => {
  it("pushes, pops and reads", async () => {
    const { sdk } = c;
    expect(await sdk.rpush(k("l"), "b", "c")).toBe(2);
    expect(await sdk.lpush(k("l"), "a")).toBe(3);
    expect(await sdk.lpushx(k("nolist"), "x")).toBe(0);
    expect(await sdk.rpushx(k("l"), "d")).toBe(4);
    expect(await sdk.lrange(k("l"), 0, -1)).toEqual(["a", "b", "c", "d"]);
    expect(await sdk.llen(k("l"))).toBe(4);
    expect(await sdk.lindex(k("l"), 1)).toBe("b");
    expect(await sdk.linsert(k("l"), "before", "c", "bb")).toBe(5);
    expect(await sdk.lset(k("l"), 0, "A")).toBe("OK");
    expect(await sdk.lpos(k("l"), "c")).toBe(3);
    expect(await sdk.lpop(k("l"))).toBe("A");
    expect(await sdk.rpop(k("l"), 2)).toEqual(["d", "c"]);
    expect(await sdk.lrange(k("l"), 0, -1)).toEqual(["b", "bb"]);
  });

  it("trims, removes and moves", async () => {
    const { sdk } = c;
    await sdk.rpush(k("l2"), "x", "y", "x", "z", "x");
    expect(await sdk.lrem(k("l2"), 2, "x")).toBe(2);
    expect(await sdk.ltrim(k("l2"), 0, 1)).toBe("OK");
    expect(await sdk.lrange(k("l2"), 0, -1)).toEqual(["y", "z"]);
    expect(await sdk.lmove(k("l2"), k("l3"), "left", "right")).toBe("y");
    expect(await sdk.lmpop(2, [k("empty"), k("l2")], "LEFT", 5)).toEqual([k("l2"), ["z"]]);
    expect(await sdk.lmpop(1, [k("empty")], "LEFT")).toBeNull();
    expect(await sdk.exec(["RPOPLPUSH", k("l3"), k("l4")])).toBe("y");
    expect(await sdk.lrange(k("l4"), 0, -1)).toEqual(["y"]);
  });
});

describe("@upstash/redis sets", () => {
  it("adds, tests and removes members", async () => {
    const { sdk } = c;
    expect(await sdk.sadd(k("s1"), "a", "b", "c")).toBe(3);
    expect(await sdk.sadd(k("s2"), "b", "c", "d")).toBe(3);
    expect(await sdk.scard(k("s1"))).toBe(3);
    expect(await sdk.sismember(k("s1"), "a")).toBe(1);
    expect(await sdk.smismember(k("s1"), ["a", "z"])).toEqual([1, 0]);
    expect((await sdk.smembers(k("s1"))).sort()).toEqual(["a", "b", "c"]);
    expect(await sdk.srem(k("s1"), "a", "z")).toBe(1);
    expect(await sdk.smove(k("s2"), k("s1"), "d")).toBe(1);
    expect((await sdk.smembers(k("s1"))).sort()).toEqual(["b", "c", "d"]);
    expect(["b", "c", "d"]).toContain(await sdk.srandmember(k("s1")));
    const popped = await sdk.spop<string>(k("s1"));
    expect(["b", "c", "d"]).toContain(popped);
    expect(await sdk.scard(k("s1"))).toBe(2);
  });

  it("combines sets", async () => {
    const { sdk } = c;
    await sdk.sadd(k("x"), 1, 2, 3);
    await sdk.sadd(k("y"), 2, 3, 4);
    expect((await sdk.sinter(k("x"), k("y"))).sort()).toEqual([2, 3]);
    expect((await sdk.sunion(k("x"), k("y"))).sort()).toEqual([1, 2, 3, 4]);
    expect(await sdk.sdiff(k("x"), k("y"))).toEqual([1]);
    expect(await sdk.sintercard([k("x"), k("y")])).toBe(2);
    expect(await sdk.sinterstore(k("xi"), k("x"), k("y"))).toBe(2);
    expect(await sdk.sunionstore(k("xu"), k("x"), k("y"))).toBe(4);
    expect(await sdk.sdiffstore(k("xd"), k("x"), k("y"))).toBe(1);
    const [cursor, members] = await sdk.sscan(k("xu"), 0, { count: 100 });
    expect(cursor).toBe("0");
    expect(members.map(Number).sort()).toEqual([1, 2, 3, 4]);
  });
});

describe("@upstash/redis sorted sets", () => {
  it("adds, scores and ranks", async () => {
    const { sdk } = c;
    const z = k("z");
    expect(await sdk.zadd(z, { score: 1, member: "one" }, { score: 2, member: "two" })).toBe(2);
    expect(await sdk.zadd(z, { nx: true }, { score: 9, member: "one" })).toBe(0);
    expect(await sdk.zadd(z, { ch: true }, { score: 3.5, member: "three" })).toBe(1);
    expect(await sdk.zcard(z)).toBe(3);
    expect(await sdk.zscore(z, "three")).toBe(3.5);
    expect(await sdk.zmscore(z, ["one", "nope"])).toEqual([1, null]);
    expect(await sdk.zincrby(z, 10, "one")).toBe(11);
    expect(await sdk.zrank(z, "two")).toBe(0);
    expect(await sdk.zrevrank(z, "two")).toBe(2);
    expect(await sdk.zcount(z, 2, 4)).toBe(2);
    expect(await sdk.zrange(z, 0, -1)).toEqual(["two", "three", "one"]);
    expect(await sdk.zrange(z, 0, 1, { withScores: true })).toEqual(["two", 2, "three", 3.5]);
    expect(await sdk.zrange(z, "(2", "+inf", { byScore: true })).toEqual(["three", "one"]);
    expect(await sdk.zrange(z, 0, 0, { rev: true })).toEqual(["one"]);
  });

  it("pops, removes and counts by lexicographic range", async () => {
    const { sdk } = c;
    const z = k("zl");
    await sdk.zadd(
      z,
      { score: 0, member: "a" },
      { score: 0, member: "b" },
      { score: 0, member: "c" },
      { score: 0, member: "d" },
      { score: 0, member: "e" },
    );
    expect(await sdk.zlexcount(z, "[b", "[d")).toBe(3);
    expect(await sdk.zrange(z, "[b", "(d", { byLex: true })).toEqual(["b", "c"]);
    expect(await sdk.zpopmin(z)).toEqual(["a", 0]);
    expect(await sdk.zpopmax(z, 1)).toEqual(["e", 0]);
    expect(await sdk.zremrangebylex(z, "[b", "[b")).toBe(1);
    expect(await sdk.zremrangebyrank(z, 0, 0)).toBe(1);
    expect(await sdk.zrem(z, "d", "x")).toBe(1);
    await sdk.zadd(z, { score: 5, member: "p" }, { score: 6, member: "q" });
    expect(await sdk.zremrangebyscore(z, 5, 5)).toBe(1);
    const [, items] = await sdk.zscan(z, 0);
    expect(items).toEqual(["q", 6]);
  });

  it("combines sorted sets", async () => {
    const { sdk } = c;
    await sdk.zadd(k("za"), { score: 1, member: "m" }, { score: 2, member: "n" });
    await sdk.zadd(k("zb"), { score: 10, member: "n" }, { score: 20, member: "o" });
    expect(await sdk.zunion(2, [k("za"), k("zb")], { withScores: true })).toEqual([
      "m",
      1,
      "n",
      12,
      "o",
      20,
    ]);
    expect(await sdk.zunionstore(k("zu"), 2, [k("za"), k("zb")], { aggregate: "max" })).toBe(3);
    expect(await sdk.zscore(k("zu"), "n")).toBe(10);
    expect(await sdk.zinterstore(k("zi"), 2, [k("za"), k("zb")], { weights: [2, 1] })).toBe(1);
    expect(await sdk.zscore(k("zi"), "n")).toBe(14);
    expect(await sdk.zdiffstore(k("zd"), 2, k("za"), k("zb"))).toBe(1);
    expect(await sdk.zrange(k("zd"), 0, -1)).toEqual(["m"]);
    expect(await sdk.exec(["ZINTERCARD", 2, k("za"), k("zb")])).toBe(1);
    expect(await sdk.exec(["ZRANGESTORE", k("zr"), k("zu"), 0, 1])).toBe(2);
    expect(await sdk.exec(["ZRANDMEMBER", k("zd")])).toBe("m");
  });
});

describe("stored values that look like status replies", () => {
  it("returns OK, PONG and QUEUED as stored, at every depth", async () => {
    const { sdk, direct } = c;
    const words = ["OK", "PONG", "QUEUED", "T0s="];
    await sdk.rpush(k("words"), ...words);
    await sdk.hset(k("wh"), { OK: "OK" });
    await sdk.xadd(k("ws"), "1-1", { OK: "OK" });
    await sdk.zadd(k("wz"), { score: 1, member: "OK" });
    for (const r of [sdk, direct]) {
      expect(await r.lrange(k("words"), 0, -1)).toEqual(words);
      expect(await r.hgetall(k("wh"))).toEqual({ OK: "OK" });
      expect(await r.xrange(k("ws"), "-", "+")).toEqual({ "1-1": { OK: "OK" } });
      expect(await r.zrange(k("wz"), 0, -1, { withScores: true })).toEqual(["OK", 1]);
      expect(await r.lindex(k("words"), 0)).toBe("OK");
      expect(await r.eval("return {{'OK', {'OK'}}, 'OK'}", [], [])).toEqual([["OK", ["OK"]], "OK"]);
      // Status replies nested in arrays, not only bulk strings.
      const status = "return {redis.status_reply('OK'), {redis.status_reply('PONG')}}";
      expect(await r.eval(status, [], [])).toEqual(["OK", ["PONG"]]);
    }
  });
});

describe("@upstash/redis geo", () => {
  it("adds places and queries them", async () => {
    const { sdk } = c;
    const g = k("geo");
    expect(
      await sdk.geoadd(
        g,
        { longitude: 13.361389, latitude: 38.115556, member: "Palermo" },
        { longitude: 15.087269, latitude: 37.502669, member: "Catania" },
      ),
    ).toBe(2);
    expect(await sdk.geodist(g, "Palermo", "Catania", "KM")).toBeCloseTo(166.2742, 3);
    expect(await sdk.geohash(g, "Palermo", "nowhere")).toEqual(["sqc8b49rny0", null]);
    const [pos] = await sdk.geopos(g, "Palermo");
    expect(pos?.lng).toBeCloseTo(13.361389, 5);
    expect(pos?.lat).toBeCloseTo(38.115556, 5);
    const found = await sdk.geosearch(
      g,
      { type: "FROMLONLAT", coordinate: { lon: 15, lat: 37 } },
      { type: "BYRADIUS", radius: 200, radiusType: "KM" },
      "ASC",
      { withDist: true },
    );
    expect(found.map((f) => f.member)).toEqual(["Catania", "Palermo"]);
    expect(found[0]?.dist).toBeCloseTo(56.4413, 3);
    const stored = await sdk.geosearchstore(
      k("geo2"),
      g,
      { type: "FROMMEMBER", member: "Palermo" },
      { type: "BYBOX", rect: { width: 10, height: 10 }, rectType: "KM" },
      "ASC",
    );
    expect(stored).toBe(1);
    expect(await sdk.zrange(k("geo2"), 0, -1)).toEqual(["Palermo"]);
  });
});

describe("@upstash/redis HyperLogLog", () => {
  it("estimates cardinality and merges", async () => {
    const { sdk } = c;
    expect(await sdk.pfadd(k("hll1"), "a", "b", "c")).toBe(1);
    expect(await sdk.pfadd(k("hll1"), "a")).toBe(0);
    await sdk.pfadd(k("hll2"), "c", "d");
    expect(await sdk.pfcount(k("hll1"))).toBe(3);
    expect(await sdk.pfcount(k("hll1"), k("hll2"))).toBe(4);
    expect(await sdk.pfmerge(k("hll3"), k("hll1"), k("hll2"))).toBe("OK");
    expect(await sdk.pfcount(k("hll3"))).toBe(4);
  });
});
