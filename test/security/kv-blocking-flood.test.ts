import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { credentialsOf } from "../../src/kv/databases/database-manager.js";
import { createDatabase } from "../../src/kv/databases/registry.js";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import { eventually } from "../harness/eventually.js";
import { floodInChild, redisClients, sampleClients } from "../harness/flood.js";
import { freePort, startRedis, testPool, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";

/**
 * Issue 27 item 2: a flood of blocking commands from both tokens (the read-only one included)
 * must not open a Redis connection each, nor hold up anything else: the pooled path, another
 * database, the queue and /healthz keep answering; past STASHD_KV_MAX_BLOCKED the flood gets 429
 * JSON with Retry-After; clients that go away mid-wait leave nothing blocked in Redis. Counted on
 * the real redis-server (INFO clients, CLIENT LIST) while the flood runs and after it.
 */
const FLOOD = 2_000;
const MAX_BLOCKED = 100;
const POOL = 2;
const BLOCK_MS = 1_500;
/** Every this many requests, the flood's client goes away 300 ms into the wait. */
const ABORT_EVERY = 4;
/**
 * What stashd may hold open on the Redis: per token kind (standard, read-only) its shared pool
 * and as many idle exclusive connections kept for reuse, the blocked requests' connections, and
 * its own admin connection.
 */
const BOUND = 2 * (POOL + POOL) + MAX_BLOCKED + 1;
let redis: TestRedis;
let other: TestRedis;
let s: TestStashd;
let watch: RedisPool;
let otherToken: string;

beforeAll(async () => {
  redis = await startRedis([], await freePort());
  other = await startRedis();
  s = await startStashd({
    kvRedisUrl: redis.url,
    kvPoolSize: POOL,
    kvMaxBlocked: MAX_BLOCKED,
    kvMaxBlockMs: 5_000,
  });
  watch = testPool(redis.url, 1);
  otherToken = credentialsOf(createDatabase(s.dataDir, "other", { redisUrl: other.url })).token;
  await eventually(async () => {
    const res = await s.kvFetch("/set/o:k/v", { token: otherToken });
    expect(res.status).toBe(200);
  });
});
afterAll(async () => {
  await watch?.close();
  await s?.stop();
  await other?.stop();
  await redis?.stop();
});

/** How long `request` took; it must answer `expected`. */
async function timed(request: () => Promise<Response>, expected: number): Promise<number> {
  const started = performance.now();
  const res = await request();
  await res.arrayBuffer();
  expect(res.status).toBe(expected);
  return performance.now() - started;
}

/** Everything that is not a blocked request, each timed, in turn while `busy()` holds. */
async function probeWhile(busy: () => boolean): Promise<Record<string, number[]>> {
  const times: Record<string, number[]> = { ping: [], get: [], other: [], queue: [], health: [] };
  const probes: [string, () => Promise<Response>][] = [
    ["ping", () => s.kvFetch("/ping")],
    ["get", () => s.kvFetch("/get/o:k", { token: s.kv.readonlyToken })],
    ["other", () => s.kvFetch("/get/o:k", { token: otherToken })],
    [
      "queue",
      () =>
        fetch(`${s.queue.url}/v2/topics`, {
          headers: { authorization: `Bearer ${s.queue.token}` },
        }),
    ],
    ["health", () => fetch(`${s.admin?.url}/healthz`)],
  ];
  while (busy()) {
    for (const [name, request] of probes) times[name]?.push(await timed(request, 200));
  }
  return times;
}

describe("a flood of blocking commands", () => {
  it("stays within its bound, leaves the rest answered and nothing blocked in Redis", async () => {
    const bodies = [
      JSON.stringify(["BLPOP", "f:list", String(BLOCK_MS / 1000)]),
      JSON.stringify(["XREAD", "BLOCK", String(BLOCK_MS), "STREAMS", "f:stream", "$"]),
    ];
    const sampler = sampleClients(watch);
    let flooding = true;
    const flood = floodInChild({
      url: `${s.kv.url}/`,
      tokens: [s.kv.token, s.kv.readonlyToken],
      bodies,
      count: FLOOD,
      abortEvery: ABORT_EVERY,
    }).finally(() => (flooding = false));
    const probing = probeWhile(() => flooding);
    const outcomes = await flood;
    const times = await probing;
    const max = await sampler.stop();

    // Never more Redis connections than the bound (+1: the one counting them).
    expect(max.connected).toBeLessThanOrEqual(BOUND + 1);
    expect(max.blocked).toBeGreaterThan(MAX_BLOCKED / 2);
    expect(max.blocked).toBeLessThanOrEqual(MAX_BLOCKED);
    expect(outcomes).toHaveLength(FLOOD);

    const served = outcomes.filter((o) => o.status === 200);
    const refused = outcomes.filter((o) => o.status === 429);
    const gone = outcomes.filter((o) => o.status === 0);
    expect(served.length).toBeGreaterThanOrEqual(MAX_BLOCKED / 2);
    for (const o of served) {
      expect(JSON.parse(o.body)).toEqual({ result: null });
      expect(o.ms).toBeGreaterThanOrEqual(BLOCK_MS - 50);
    }
    expect(refused.length).toBeGreaterThan(FLOOD / 2);
    for (const o of refused) {
      expect(Number(o.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(JSON.parse(o.body)).toEqual({
        error: expect.stringMatching(/^ERR too many blocked requests on database default/),
      });
    }
    // Every answer is one of those; the rest are the requests whose client went away.
    expect(served.length + refused.length + gone.length).toBe(FLOOD);
    expect(gone.length).toBeLessThanOrEqual(FLOOD / ABORT_EVERY);

    // The rest kept answering during the flood.
    for (const [name, list] of Object.entries(times)) {
      expect(list.length, name).toBeGreaterThan(0);
      // Never behind the flood's blocks all the way (3 rounds of 1.5 s); loose for a loaded CI.
      expect(Math.max(...list), name).toBeLessThan(4_000);
    }
    console.log(
      JSON.stringify({
        maxConnected: max.connected,
        maxBlocked: max.blocked,
        served: served.length,
        refused: refused.length,
        gone: gone.length,
        probes: Object.fromEntries(
          Object.entries(times).map(([k, v]) => [
            k,
            { n: v.length, maxMs: Math.round(Math.max(...v)) },
          ]),
        ),
      }),
    );

    // Afterwards nothing of stashd's is blocked in Redis, and blocking works again.
    await eventually(async () => expect((await redisClients(watch)).blocked).toBe(0), {
      timeoutMs: 2_000,
    });
    const list = await watch.exec(["CLIENT", "LIST"]);
    const lines = list.kind === "bulk" ? list.value.toString().trim().split("\n") : [];
    // (Idle connections kept for reuse still show their last command, so flags are what count.)
    expect(lines.filter((l) => /flags=\S*b/.test(l))).toEqual([]);
    await watch.exec(["RPUSH", "f:list", "after"]);
    const res = await s.kvFetch("/blpop/f:list/1");
    expect(await res.json()).toEqual({ result: ["f:list", "after"] });
  });
});
