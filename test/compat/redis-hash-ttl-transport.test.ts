import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseRedisUrl } from "../../src/shared/redis/connection.js";
import { RedisPool } from "../../src/shared/redis/pool.js";
import { eventually } from "../harness/eventually.js";
import { freePort, startRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { startCompat, type Compat } from "./context.js";

/**
 * The emulated hash commands (on the harness's Redis 7.0) through every way a client reaches
 * them: pipelines, /multi-exec, the read-only token, base64 and resp2 replies, and across a
 * restart of stashd and of Redis.
 */
let c: Compat;
let k: (name: string) => string;
let backend: RedisPool;
const POOL = { size: 1, connectTimeoutMs: 2000, retryBackoffMs: 20 };

beforeAll(async () => {
  c = await startCompat();
  k = c.key;
  backend = new RedisPool(parseRedisUrl(c.redis.url), POOL);
});
afterAll(async () => {
  await backend?.close();
  await c?.stop();
});

describe("emulated hash commands in pipelines and transactions", () => {
  it("run in order inside a pipeline, errors per item", async () => {
    const key = k("p1");
    const replies = await c.sdk
      .pipeline()
      .hset(key, { a: 1, b: 2 })
      .hexpire(key, "a", 100)
      .httl(key, ["a", "b"])
      .hsetex(key, { expiration: { ex: 50 } }, { c: 3 })
      .hgetex(key, { persist: true }, "c")
      .hgetdel(key, "b")
      .hgetall(key)
      .exec();
    expect(replies).toEqual([2, [1], [100, -1], 1, { c: 3 }, { b: 2 }, { a: 1, c: 3 }]);
  });

  it("run atomically inside /multi-exec", async () => {
    const key = k("m1");
    await c.sdk.hset(key, { a: 1 });
    const replies = await c.sdk
      .multi()
      .hpexpire(key, "a", 30)
      .hget(key, "a")
      .hpersist(key, "a")
      .exec();
    expect(replies).toEqual([[1], 1, [1]]);
    expect(await c.sdk.httl(key, "a")).toEqual([-1]);
  });

  it("keep working after SCRIPT FLUSH, in a pipeline and a transaction", async () => {
    const key = k("flush");
    await c.sdk.hset(key, { a: 1 });
    await backend.exec(["SCRIPT", "FLUSH"]);
    expect(await c.sdk.pipeline().hexpire(key, "a", 10).httl(key, "a").exec()).toEqual([[1], [10]]);
    await backend.exec(["SCRIPT", "FLUSH"]);
    expect(await c.sdk.multi().hpersist(key, "a").hget(key, "a").exec()).toEqual([[1], 1]);
  });
});

describe("emulated hash commands with the read-only token", () => {
  it("reads with TTLs applied, refuses the writes", async () => {
    const { url, readonlyToken } = c.stashd.kv;
    const ro = new Redis({ url, token: readonlyToken });
    const key = k("ro");
    await c.sdk.hset(key, { keep: 1, gone: 2 });
    await c.sdk.hpexpire(key, "gone", 20);
    await eventually(async () => expect(await ro.hgetall(key)).toEqual({ keep: 1 }));
    expect(await ro.hlen(key)).toBe(1);
    expect(await ro.httl(key, ["keep", "gone"])).toEqual([-1, -2]);
    await expect(ro.hexpire(key, "keep", 10)).rejects.toThrow(
      "NOPERM this user has no permissions to run the 'hexpire' command",
    );
    await expect(ro.hset(key, { x: 1 })).rejects.toThrow("'hset' command");
  });
});

describe("emulated hash commands in other reply formats", () => {
  it("answer in base64 and resp2", async () => {
    const key = k("fmt");
    await c.sdk.hset(key, { a: "v" });
    const resp2 = await c.stashd.kvFetch("/pipeline", {
      body: JSON.stringify([
        ["HEXPIRE", key, "100", "FIELDS", "2", "a", "zz"],
        ["HGETEX", key, "FIELDS", "1", "a"],
        ["HTTL", key, "FIELDS"],
      ]),
      headers: { "upstash-response-format": "resp2" },
    });
    expect(await resp2.text()).toBe(
      "*2\r\n:1\r\n:-2\r\n*1\r\n$1\r\nv\r\n-ERR wrong number of arguments for 'httl' command\r\n",
    );
    const b64 = await c.stashd.kvFetch("/", {
      body: JSON.stringify(["HGETDEL", key, "FIELDS", "1", "a"]),
      headers: { "upstash-encoding": "base64" },
    });
    expect(await b64.json()).toEqual({ result: [Buffer.from("v").toString("base64")] });
  });
});

describe("field TTLs across restarts", () => {
  it("survive a restart of stashd and a reload of Redis from its RDB file", async () => {
    // A private Redis that allows DEBUG RELOAD (save the dataset, then load it back).
    const redis = await startRedis(["--enable-debug-command", "yes"], await freePort());
    const direct = new RedisPool(parseRedisUrl(redis.url), POOL);
    const first = await startStashd({ kvRedisUrl: redis.url });
    let second: TestStashd | undefined;
    try {
      const key = k("restart");
      const sdk1 = new Redis({ url: first.kv.url, token: first.kv.token });
      await sdk1.hset(key, { long: 1, short: 2 });
      await sdk1.hexpire(key, "long", 1000);
      await sdk1.hpexpire(key, "short", 300);
      await first.stop();
      second = await startStashd({ kvRedisUrl: redis.url });
      const sdk = new Redis({ url: second.kv.url, token: second.kv.token });
      expect((await sdk.httl(key, "long"))[0]).toBeGreaterThan(990);
      expect(await direct.exec(["DEBUG", "RELOAD"])).toMatchObject({ kind: "simple" });
      expect((await sdk.httl(key, "long"))[0]).toBeGreaterThan(990);
      await eventually(async () => expect(await sdk.hgetall(key)).toEqual({ long: 1 }));
    } finally {
      await second?.stop();
      await direct.close();
      await redis.stop();
    }
  });
});
