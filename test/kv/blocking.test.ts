import { Queue } from "@upstash/queue";
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import { eventually } from "../harness/eventually.js";
import { redisClients } from "../harness/flood.js";
import { startRedis, testPool, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { bodyOf, command } from "./helpers.js";

/**
 * Issue 27 item 2: blocking commands over REST, each request on an exclusive connection, its
 * wait cut to STASHD_KV_MAX_BLOCK_MS and ended in Redis when the client goes away or stashd stops.
 * The command deadline (300 ms) and the request timeout (400 ms) are below the block cap here, so
 * a blocked request must outlive both.
 */
const CAP_MS = 1_500;
let redis: TestRedis;
let s: TestStashd;
let watch: RedisPool;

beforeAll(async () => {
  redis = await startRedis();
  s = await startStashd({
    kvRedisUrl: redis.url,
    kvMaxBlockMs: CAP_MS,
    kvCommandTimeoutMs: 300,
    requestTimeoutMs: 400,
  });
  watch = testPool(redis.url, 1);
});
afterAll(async () => {
  await watch?.close();
  await s?.stop();
  await redis?.stop();
});

const blockedNow = async (): Promise<number> => (await redisClients(watch)).blocked;

/** Runs `push` on the watch connection once a client is blocked in Redis. */
async function whenBlocked(push: () => Promise<unknown>): Promise<void> {
  await eventually(async () => expect(await blockedNow()).toBeGreaterThan(0));
  await push();
}

/** A command with its status, body and how long it took. */
async function timed(
  argv: unknown[],
  token?: string,
): Promise<{ status: number; body: unknown; ms: number }> {
  const started = performance.now();
  const out = await command(s, argv, token === undefined ? {} : { token });
  return { ...out, ms: performance.now() - started };
}

describe("blocking list and sorted-set commands", () => {
  it("BLPOP gets an element pushed while it waits, past the command and request timeouts", async () => {
    const pending = timed(["BLPOP", "b:list", "5"]);
    await whenBlocked(async () => {
      await new Promise((r) => setTimeout(r, 500));
      await watch.exec(["RPUSH", "b:list", "v1"]);
    });
    const out = await pending;
    expect(out).toMatchObject({ status: 200, body: { result: ["b:list", "v1"] } });
    expect(out.ms).toBeGreaterThanOrEqual(450);
  });

  it("answers null when the timeout expires", async () => {
    const out = await timed(["BRPOP", "b:empty", "0.2"]);
    expect(out).toMatchObject({ status: 200, body: { result: null } });
    expect(out.ms).toBeGreaterThanOrEqual(190);
    expect(out.ms).toBeLessThan(1_000);
  });

  it("cuts a timeout of 0 (forever) or past the cap to STASHD_KV_MAX_BLOCK_MS", async () => {
    // Each request waits on a backend connection of its own, so the three wait out the cap
    // together (one cap of test time, not three), each timed on its own.
    const outs = await Promise.all(
      [
        ["BLPOP", "b:empty", "0"],
        ["BLMOVE", "b:empty", "b:dst", "LEFT", "RIGHT", "3600"],
        ["XREAD", "BLOCK", "0", "STREAMS", "b:nostream", "$"],
      ].map((argv) => timed(argv)),
    );
    for (const out of outs) {
      expect(out).toMatchObject({ status: 200, body: { result: null } });
      expect(out.ms).toBeGreaterThanOrEqual(CAP_MS - 50);
      expect(out.ms).toBeLessThan(CAP_MS + 1_000);
    }
  });

  it("serves BZPOPMIN, BZPOPMAX, BLMOVE, BRPOPLPUSH, BLMPOP and BZMPOP", async () => {
    const cases: [unknown[], string[], unknown][] = [
      [
        ["BZPOPMIN", "b:z1", "5"],
        ["ZADD", "b:z1", "1", "a"],
        ["b:z1", "a", "1"],
      ],
      [
        ["BZPOPMAX", "b:z2", "5"],
        ["ZADD", "b:z2", "2", "b"],
        ["b:z2", "b", "2"],
      ],
      [["BLMOVE", "b:l1", "b:l1d", "RIGHT", "LEFT", "5"], ["RPUSH", "b:l1", "m"], "m"],
      [["BRPOPLPUSH", "b:l2", "b:l2d", "5"], ["RPUSH", "b:l2", "n"], "n"],
      [
        ["BLMPOP", "5", "1", "b:l3", "LEFT"],
        ["RPUSH", "b:l3", "o"],
        ["b:l3", ["o"]],
      ],
      [
        ["BZMPOP", "5", "1", "b:z3", "MIN"],
        ["ZADD", "b:z3", "3", "c"],
        ["b:z3", [["c", "3"]]],
      ],
    ];
    for (const [argv, push, result] of cases) {
      const pending = timed(argv);
      await whenBlocked(() => watch.exec(push));
      expect(await pending).toMatchObject({ status: 200, body: { result } });
    }
    expect(await watch.exec(["LRANGE", "b:l1d", "0", "-1"])).toMatchObject({ kind: "array" });
  });

  it("refuses a timeout Redis would not read, with Redis's words", async () => {
    expect(await command(s, ["BLPOP", "b:x", "abc"])).toEqual({
      status: 400,
      body: { error: "ERR timeout is not a float or out of range" },
    });
    expect(await command(s, ["BLPOP", "b:x", "-1"])).toEqual({
      status: 400,
      body: { error: "ERR timeout is negative" },
    });
    expect(await command(s, ["XREAD", "BLOCK", "1.5", "STREAMS", "b:s", "$"])).toEqual({
      status: 400,
      body: { error: "ERR timeout is not an integer or out of range" },
    });
  });

  it("still refuses WAIT and WAITAOF", async () => {
    for (const argv of [
      ["WAIT", "0", "0"],
      ["WAITAOF", "0", "0", "0"],
    ]) {
      const out = await command(s, argv);
      expect(out.status).toBe(400);
      expect(out.body).toEqual({ error: expect.stringMatching(/is not allowed in REST/) });
    }
  });
});

describe("blocking stream reads", () => {
  it("XREAD BLOCK and XREADGROUP BLOCK get an entry added while they wait", async () => {
    await watch.exec(["XGROUP", "CREATE", "b:s2", "g", "$", "MKSTREAM"]);
    const read = timed(["XREAD", "COUNT", "1", "BLOCK", "5000", "STREAMS", "b:s1", "$"]);
    await whenBlocked(() => watch.exec(["XADD", "b:s1", "1-1", "f", "v"]));
    expect(await read).toMatchObject({
      status: 200,
      body: { result: [["b:s1", [["1-1", ["f", "v"]]]]] },
    });
    const group = timed([
      "XREADGROUP",
      "GROUP",
      "g",
      "c1",
      "BLOCK",
      "5000",
      "STREAMS",
      "b:s2",
      ">",
    ]);
    await whenBlocked(() => watch.exec(["XADD", "b:s2", "2-1", "f", "w"]));
    expect(await group).toMatchObject({
      status: 200,
      body: { result: [["b:s2", [["2-1", ["f", "w"]]]]] },
    });
  });

  it("a stream key named BLOCK does not make XREAD block", async () => {
    await watch.exec(["XADD", "block", "1-1", "f", "v"]);
    const out = await timed(["XREAD", "STREAMS", "block", "0"]);
    expect(out).toMatchObject({
      status: 200,
      body: { result: [["block", [["1-1", ["f", "v"]]]]] },
    });
    expect(out.ms).toBeLessThan(500);
  });

  it("the read-only token may XREAD BLOCK, and may not pop", async () => {
    const ro = s.kv.readonlyToken;
    const read = timed(["XREAD", "BLOCK", "5000", "STREAMS", "b:s3", "$"], ro);
    await whenBlocked(() => watch.exec(["XADD", "b:s3", "3-1", "f", "x"]));
    expect(await read).toMatchObject({
      status: 200,
      body: { result: [["b:s3", expect.any(Array)]] },
    });
    await watch.exec(["RPUSH", "b:ro", "kept"]);
    for (const argv of [
      ["BLPOP", "b:ro", "1"],
      ["BLMOVE", "b:ro", "b:ro2", "LEFT", "LEFT", "1"],
      ["XREADGROUP", "GROUP", "g", "c", "BLOCK", "10", "STREAMS", "b:s2", ">"],
    ]) {
      const out = await command(s, argv, { token: ro });
      expect(out.status).toBe(400);
      expect(out.body).toEqual({ error: expect.stringMatching(/^NOPERM/) });
    }
    expect(await watch.exec(["LRANGE", "b:ro", "0", "-1"])).toEqual({
      kind: "array",
      value: [{ kind: "bulk", value: Buffer.from("kept") }],
    });
  });
});

describe("ending a wait early", () => {
  it("ends the wait in Redis when the client goes away, and the next request is served", async () => {
    expect(await blockedNow()).toBe(0);
    const abort = new AbortController();
    const pending = s
      .kvFetch("/blpop/b:gone/0", { signal: abort.signal })
      .catch((err: unknown) => err);
    await eventually(async () => expect(await blockedNow()).toBe(1));
    abort.abort();
    await pending;
    await eventually(async () => expect(await blockedNow()).toBe(0), { timeoutMs: 1_000 });
    // Nothing was popped for the gone client: the element stays for the next one.
    await watch.exec(["RPUSH", "b:gone", "later"]);
    expect(await command(s, ["BLPOP", "b:gone", "1"])).toEqual({
      status: 200,
      body: { result: ["b:gone", "later"] },
    });
  });

  it("ends every wait when stashd stops, answering 503", async () => {
    const own = await startStashd({ kvRedisUrl: redis.url, shutdownGraceMs: 5_000 });
    const pending = own.kvFetch("/blpop/b:stop/0").then(async (res) => ({
      status: res.status,
      body: await bodyOf(res),
    }));
    await eventually(async () => expect(await blockedNow()).toBe(1));
    const started = performance.now();
    await own.stop();
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(await pending).toEqual({
      status: 503,
      body: { error: "ERR blocking command ended: stashd is shutting down; retry" },
    });
    await eventually(async () => expect(await blockedNow()).toBe(0), { timeoutMs: 1_000 });
  });
});

describe("transactions and pipelines", () => {
  it("runs blocking commands inside /multi-exec without blocking", async () => {
    const started = performance.now();
    const res = await s.kvFetch("/multi-exec", {
      body: JSON.stringify([
        ["RPUSH", "b:tx", "a"],
        ["BLPOP", "b:tx", "0"],
        ["BLPOP", "b:tx", "0"],
        ["XREAD", "BLOCK", "0", "STREAMS", "b:txs", "$"],
      ]),
    });
    expect(await bodyOf(res)).toEqual([
      { result: 1 },
      { result: ["b:tx", "a"] },
      { result: null },
      { result: null },
    ]);
    expect(performance.now() - started).toBeLessThan(500);
  });

  it("runs a pipeline's commands in order, its blocking ones on its own connection", async () => {
    const pending = s.kvFetch("/pipeline", {
      body: JSON.stringify([
        ["SET", "b:p", "1"],
        ["BLPOP", "b:pl", "5"],
        ["INCR", "b:p"],
      ]),
    });
    await whenBlocked(async () => {
      // The SET before the BLPOP has run; the INCR after it has not.
      expect(await watch.exec(["GET", "b:p"])).toEqual({ kind: "bulk", value: Buffer.from("1") });
      await watch.exec(["RPUSH", "b:pl", "x"]);
    });
    expect(await bodyOf(await pending)).toEqual([
      { result: "OK" },
      { result: ["b:pl", "x"] },
      { result: 2 },
    ]);
  });

  it("a pipeline's blocking commands share one budget of STASHD_KV_MAX_BLOCK_MS", async () => {
    const started = performance.now();
    const res = await s.kvFetch("/pipeline", {
      body: JSON.stringify([
        ["BLPOP", "b:none", "1"],
        ["BLPOP", "b:none", "0"],
        ["BLPOP", "b:none", "0"],
      ]),
    });
    expect(await bodyOf(res)).toEqual([
      { result: null },
      { result: null },
      { error: expect.stringMatching(/^ERR blocking commands of one request may wait 1500 ms/) },
    ]);
    const ms = performance.now() - started;
    expect(ms).toBeGreaterThanOrEqual(CAP_MS - 50);
    expect(ms).toBeLessThan(CAP_MS + 1_000);
  });
  it("holds its connection at most the cap plus the command deadline, whatever the timeouts", async () => {
    // Redis ends a wait only at its cron's pace (100 ms at hz 10): 40 BLPOPs of 1 ms take 4 s.
    const started = performance.now();
    const res = await s.kvFetch("/pipeline", {
      body: JSON.stringify(Array.from({ length: 40 }, () => ["BLPOP", "b:none", "0.001"])),
    });
    expect(res.status).toBe(400);
    expect(await bodyOf(res)).toEqual({
      error: expect.stringMatching(
        /^ERR blocking command ended: the request held its own connection for 1800 ms/,
      ),
    });
    const ms = performance.now() - started;
    expect(ms).toBeGreaterThanOrEqual(1_750);
    expect(ms).toBeLessThan(2_500);
    await eventually(async () => expect(await blockedNow()).toBe(0), { timeoutMs: 1_000 });
  });
});

describe("official clients", () => {
  it("@upstash/redis xread and xreadgroup with blockMS (auto-pipelined and not)", async () => {
    const url = s.kv.url;
    for (const enableAutoPipelining of [true, false]) {
      const redisSdk = new Redis({ url, token: s.kv.token, enableAutoPipelining });
      const key = `b:sdk:${String(enableAutoPipelining)}`;
      const read = redisSdk.xread(key, "$", { count: 1, blockMS: 5_000 });
      await whenBlocked(() => watch.exec(["XADD", key, "5-1", "f", "v"]));
      expect(await read).toEqual([[key, [["5-1", ["f", "v"]]]]]);
      await redisSdk.xgroup(key, { type: "CREATE", group: "g", id: "$" });
      const group = redisSdk.xreadgroup("g", "c", key, ">", { count: 1, blockMS: 5_000 });
      await whenBlocked(() => watch.exec(["XADD", key, "6-1", "f", "w"]));
      expect(await group).toEqual([[key, [["6-1", ["f", "w"]]]]]);
    }
  });

  it("@upstash/queue receiveMessage with a block time", async () => {
    const redisSdk = new Redis({ url: s.kv.url, token: s.kv.token });
    // The queue is typed against the @upstash/redis it was built with (1.29); it calls only
    // public commands, which today's client has too.
    const redisForQueue = redisSdk as unknown as ConstructorParameters<typeof Queue>[0]["redis"];
    const queue = new Queue({ redis: redisForQueue, queueName: "b-jobs" });
    expect(await queue.sendMessage({ job: 1 })).toEqual(expect.any(String));
    expect(await queue.receiveMessage(1_000)).toMatchObject({ body: { job: 1 } });
    // Nothing left: it waits its block time, then answers nothing.
    const started = performance.now();
    expect(await queue.receiveMessage(300)).toBeNull();
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
  });
});
