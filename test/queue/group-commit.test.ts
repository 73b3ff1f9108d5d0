import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ScriptCode } from "../../src/queue/store/codes.js";
import { MessageStore } from "../../src/queue/store/message-store.js";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import { startRedis, testPool, type TestRedis } from "../harness/redis.js";
import { storeMessage } from "./new-message.js";
import { singlePartition } from "../../src/queue/store/partitions.js";

/**
 * Group commit (store/turn-batch.ts): the publishes of one event-loop turn are stored by one
 * enqueue script call and the finishes of one turn go out as one pipeline, while each call keeps
 * its own outcome: its dedup verdict, its lease, its lease check.
 */
let redis: TestRedis;
let pool: RedisPool;
let store: MessageStore;

beforeAll(async () => {
  redis = await startRedis();
  pool = testPool(redis.url, 4);
  store = new MessageStore(singlePartition(pool), 60_000);
  // Loads the scripts, so the counted calls below are the real ones (no NOSCRIPT round).
  const now = Date.now();
  await store.enqueue(now, [storeMessage("warm", now + 60_000)]);
  await store.finish(now, {
    id: "warm",
    token: "-",
    outcome: "DELIVERED",
    attempt: "{}",
    children: [],
  });
});
afterAll(async () => {
  await pool?.close();
  await redis?.stop();
});

/** EVALSHA calls Redis ran since the last reset of its statistics. */
async function evalshaCalls(): Promise<number> {
  const info = await pool.exec(["INFO", "commandstats"]);
  const text = info.kind === "bulk" ? info.value.toString() : "";
  return Number(/cmdstat_evalsha:calls=(\d+)/.exec(text)?.[1] ?? 0);
}

describe("group commit", () => {
  it("stores the publishes of one turn with one script call, each with its own outcome", async () => {
    const now = Date.now();
    await pool.exec(["CONFIG", "RESETSTAT"]);
    const dedup = { key: "id:same", windowMs: 60_000, response: '[{"messageId":"gc-1"}]' };
    const results = await Promise.all([
      store.enqueue(now, [storeMessage("gc-1", now)], dedup),
      store.enqueue(now, [storeMessage("gc-2", now)], { ...dedup, response: "second" }),
      store.enqueue(now, [storeMessage("gc-3", now)], undefined, {
        token: "tok-3",
        leaseMs: 60_000,
      }),
      store.enqueue(now, [
        storeMessage("gc-4a", now + 60_000),
        storeMessage("gc-4b", now + 60_000),
      ]),
    ]);
    expect(await evalshaCalls()).toBe(1);
    expect(results).toEqual([
      { stored: true },
      { stored: false, response: '[{"messageId":"gc-1"}]' },
      { stored: true },
      { stored: true },
    ]);
    const stored = await store.getMany(["gc-1", "gc-2", "gc-3", "gc-4a", "gc-4b"]);
    expect(stored.map((m) => [m.meta.messageId, m.state])).toEqual([
      ["gc-1", "CREATED"],
      ["gc-3", "ACTIVE"],
      ["gc-4a", "CREATED"],
      ["gc-4b", "CREATED"],
    ]);
  });

  it("records the finishes of one turn together, each with its own lease check", async () => {
    const now = Date.now();
    const lease = { token: "tok-f", leaseMs: 60_000 };
    await store.enqueue(
      now,
      [storeMessage("f-1", now), storeMessage("f-2", now)],
      undefined,
      lease,
    );
    await pool.exec(["CONFIG", "RESETSTAT"]);
    const finish = (id: string, token: string) =>
      store.finish(now, { id, token, outcome: "DELIVERED", attempt: "{}", children: [] });
    const results = await Promise.all([finish("f-1", "tok-f"), finish("f-2", "stale")]);
    expect(results).toEqual([ScriptCode.ok, ScriptCode.leaseLost]);
    expect(await evalshaCalls()).toBe(2);
    expect((await store.getMany(["f-1", "f-2"])).map((m) => m.meta.messageId)).toEqual(["f-2"]);
  });
});
