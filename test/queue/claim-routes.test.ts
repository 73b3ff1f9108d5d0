import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MessageMeta } from "../../src/queue/domain/message.js";
import { queueKeys } from "../../src/queue/store/keys.js";
import { MessageStore, type NewMessage } from "../../src/queue/store/message-store.js";
import { singlePartition } from "../../src/queue/store/partitions.js";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import { eventually } from "../harness/eventually.js";
import { startRedis, testPool, type TestRedis } from "../harness/redis.js";
import { message, storeOnOwnRedis } from "./lua-guard.js";

/**
 * The claim's route cache (lua/claim.lua, `<p>due-routes`): the routes (origin, FIFO queue) of
 * due messages a claim skipped are kept, so later claims read a range of them with one HMGET
 * instead of one hash read per skipped entry; leased or vanished messages leave it, and the
 * cache expires so entries of messages that left the due set otherwise cannot pile up.
 */
const LEASE_MS = 60_000;
const BUSY = "http://busy.example:1";
const ctx = storeOnOwnRedis();

const msg = (id: string, url: string, now: number): NewMessage => message(id, now, { url });
const ids = (claimed: { meta: MessageMeta }[]) => claimed.map((c) => c.meta.messageId);
const atShare = (n: number) => ({ cap: 2, scan: 100, inflight: [[BUSY, n]] as [string, number][] });

async function texts(...cmd: string[]): Promise<string[]> {
  const reply = await ctx.pool.exec(cmd);
  if (reply.kind !== "array") throw new Error(`unexpected reply ${JSON.stringify(reply)}`);
  return reply.value.map((r) => (r.kind === "bulk" ? r.value.toString() : ""));
}

/** The cached routes, id -> route. */
async function routes(): Promise<Record<string, string>> {
  const flat = await texts("HGETALL", queueKeys.dueRoutes);
  return Object.fromEntries(flat.flatMap((v, i) => (i % 2 ? [] : [[v, flat[i + 1] ?? ""]])));
}

/** HMGET calls Redis ran (scripts' included) since the last call. */
async function hmgetCalls(): Promise<number> {
  const reply = await ctx.pool.exec(["INFO", "commandstats"]);
  const text = reply.kind === "bulk" ? reply.value.toString() : "";
  await ctx.pool.exec(["CONFIG", "RESETSTAT"]);
  return Number(/cmdstat_hmget:calls=(\d+)/.exec(text)?.[1] ?? 0);
}

describe("the claim's route cache", () => {
  it("keeps the routes of skipped messages and reads them back with one HMGET", async () => {
    const now = Date.now();
    const busy = Array.from({ length: 20 }, (_, i) => msg(`b${i}`, `${BUSY}/${i}`, now));
    await ctx.store.enqueue(now, [...busy, msg("o1", "http://other.example/1", now)]);
    await hmgetCalls();
    const first = await ctx.store.claim(now, 10, LEASE_MS, atShare(2));
    expect(ids(first.claimed)).toEqual(["o1"]);
    // One HMGET of the cache, one route read per entry, one read of the leased message.
    expect(await hmgetCalls()).toBe(1 + 21 + 1);
    const cached = await routes();
    expect(Object.keys(cached).sort()).toEqual(busy.map((m) => m.meta.messageId).sort());
    expect(cached["b0"]).toBe(`:${BUSY}`);

    const second = await ctx.store.claim(now, 10, LEASE_MS, atShare(2));
    expect(second.claimed).toEqual([]);
    expect(second.skipped).toBe(20);
    expect(second.atShare).toEqual([BUSY]);
    expect(await hmgetCalls()).toBe(1);
  });

  it("expires, so entries of messages that left the due set otherwise go too", async () => {
    const now = Date.now();
    await ctx.store.enqueue(now, [msg("b1", `${BUSY}/1`, now)]);
    await ctx.store.claim(now, 10, LEASE_MS, atShare(2));
    const reply = await ctx.pool.exec(["PTTL", queueKeys.dueRoutes]);
    const ttl = reply.kind === "int" ? Number(reply.value) : -1;
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    // A later claim that caches more keeps the expiry it has.
    await ctx.pool.exec(["PEXPIRE", queueKeys.dueRoutes, "5000"]);
    await ctx.store.enqueue(now, [msg("b2", `${BUSY}/2`, now)]);
    await ctx.store.claim(now, 10, LEASE_MS, atShare(2));
    const after = await ctx.pool.exec(["PTTL", queueKeys.dueRoutes]);
    expect(after.kind === "int" && Number(after.value)).toBeLessThanOrEqual(5_000);
    expect(Object.keys(await routes()).sort()).toEqual(["b1", "b2"]);
  });

  it("forgets the routes of the messages it leases, in due order", async () => {
    const now = Date.now();
    await ctx.store.enqueue(now, [msg("b1", `${BUSY}/1`, now), msg("b2", `${BUSY}/2`, now)]);
    await ctx.store.claim(now, 10, LEASE_MS, atShare(2));
    const later = await ctx.store.claim(now, 10, LEASE_MS, atShare(1));
    expect(ids(later.claimed)).toEqual(["b1"]);
    expect(later.claimed[0]?.body.toString()).toBe("body of b1");
    expect(Object.keys(await routes())).toEqual(["b2"]);
  });

  it("keeps a FIFO queue's later messages behind a skipped one when read from the cache", async () => {
    const now = Date.now();
    // Queue names with digits and colons: the cached route's length prefix keeps them apart.
    const queue = "12:q:3";
    await ctx.store.enqueue(now, [
      msg("q1", `${BUSY}/1`, now),
      msg("q2", "http://other.example/2", now),
      msg("o1", "http://other.example/3", now),
    ]);
    for (const id of ["q1", "q2"])
      await ctx.pool.exec(["HSET", queueKeys.message(id), "queue", queue]);
    const first = await ctx.store.claim(now, 10, LEASE_MS, atShare(2));
    expect(ids(first.claimed)).toEqual(["o1"]);
    expect(await routes()).toEqual({
      q1: `6:${queue}${BUSY}`,
      q2: `6:${queue}http://other.example`,
    });
    const second = await ctx.store.claim(now, 10, LEASE_MS, atShare(2));
    expect(second.claimed).toEqual([]);
    expect(second.skipped).toBe(2);
    const free = await ctx.store.claim(now, 10, LEASE_MS, atShare(0));
    expect(ids(free.claimed)).toEqual(["q1", "q2"]);
  });

  it("drops a cached due entry whose message is gone", async () => {
    const now = Date.now();
    await ctx.store.enqueue(now, [msg("b1", `${BUSY}/1`, now), msg("b2", `${BUSY}/2`, now)]);
    await ctx.store.claim(now, 10, LEASE_MS, atShare(2));
    await ctx.pool.exec(["DEL", queueKeys.message("b1")]);
    const later = await ctx.store.claim(now, 10, LEASE_MS, atShare(0));
    expect(ids(later.claimed)).toEqual(["b2"]);
    expect(later.skipped).toBe(0);
    expect(await texts("ZRANGE", queueKeys.due, "0", "-1")).toEqual([]);
    expect(await routes()).toEqual({});
  });
});

describe("the route cache on a Redis with a replica", () => {
  let master: TestRedis;
  let replica: TestRedis;
  let pools: RedisPool[] = [];

  beforeAll(async () => {
    master = await startRedis(["--repl-diskless-sync-delay", "0"]);
    replica = await startRedis(["--replicaof", "127.0.0.1", String(master.port)]);
    // Online first: a full sync after the claim would copy the master's memory, cache included.
    const probe = testPool(master.url, 1);
    await eventually(async () => {
      const info = await probe.exec(["INFO", "replication"]);
      expect(info.kind === "bulk" && info.value.toString()).toMatch(/slave0:.*state=online/);
    });
    await probe.close();
  });
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.close()));
    await Promise.all([master, replica].map((r) => r?.stop()));
  });

  it("lives in the master's memory only: its writes are not replicated", async () => {
    const [onMaster, onReplica] = [testPool(master.url, 1), testPool(replica.url, 1)];
    pools = [onMaster, onReplica];
    const store = new MessageStore(singlePartition(onMaster), 60_000);
    const now = Date.now();
    await store.enqueue(now, [
      msg("b1", `${BUSY}/1`, now),
      msg("o1", "http://other.example/", now),
    ]);
    await store.claim(now, 10, LEASE_MS, atShare(2));
    const exists = async (pool: RedisPool, key: string) => pool.exec(["EXISTS", key]);
    expect(await exists(onMaster, queueKeys.dueRoutes)).toEqual({ kind: "int", value: "1" });
    // The claim's other writes (o1 leased) reach the replica; the cache does not.
    await eventually(async () =>
      expect(await exists(onReplica, queueKeys.message("o1"))).toEqual({ kind: "int", value: "1" }),
    );
    await eventually(async () =>
      expect(await onReplica.exec(["HGET", queueKeys.message("o1"), "state"])).toMatchObject({
        kind: "bulk",
      }),
    );
    const state = await onReplica.exec(["HGET", queueKeys.message("o1"), "state"]);
    expect(state.kind === "bulk" && state.value.toString()).toBe("ACTIVE");
    expect(await exists(onReplica, queueKeys.dueRoutes)).toEqual({ kind: "int", value: "0" });
  });
});
