import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { MessageStore } from "../../src/queue/store/message-store.js";
import { singlePartition } from "../../src/queue/store/partitions.js";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import type { Reply } from "../../src/shared/redis/resp.js";
import { startRedis, testPool, type TestRedis } from "../harness/redis.js";
import { storeMessage } from "./new-message.js";

/**
 * A message handed off at publish (leased to the storing process in the enqueue call, see
 * Dispatcher.offer) is stored straight as ACTIVE: the same state and events as being inserted
 * due and then leased, without passing through the due set. And what a message published and
 * delivered this way costs its Redis, in commands (docs/benchmarks.md, issue 29: the counts
 * are the cost contract the scripts were trimmed to; more commands is a regression).
 */
let redis: TestRedis;
let pool: RedisPool;
let store: MessageStore;
const parts = () => store.parts.main.keys;

beforeAll(async () => {
  redis = await startRedis();
  pool = testPool(redis.url, 1);
  store = new MessageStore(singlePartition(pool), 60_000);
});
afterAll(async () => {
  await pool?.close();
  await redis?.stop();
});
beforeEach(async () => {
  await pool.exec(["FLUSHALL"]);
});

const text = (r: Reply): string =>
  r.kind === "bulk" || r.kind === "int" ? r.value.toString() : "";
const strings = (r: Reply): string[] => (r.kind === "array" ? r.value.map(text) : []);
const exec = async (...cmd: string[]) => pool.exec(cmd);

/**
 * Commands Redis ran since the last CONFIG RESETSTAT, by name; left out: EVALSHA, INFO, and the
 * SCRIPT LOAD of a script's first call (the store loads each script when Redis says NOSCRIPT).
 */
async function commandCounts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const line of text(await exec("INFO", "commandstats")).split("\r\n")) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (m && !["evalsha", "info", "config|resetstat", "script|load"].includes(m[1] ?? ""))
      out[m[1] as string] = Number(m[2]);
  }
  return out;
}

const total = (c: Record<string, number>) => Object.values(c).reduce((a, b) => a + b, 0);

/** The log stream's (id, state) pairs, oldest first. */
async function events(): Promise<string[][]> {
  const reply = await exec("XRANGE", parts().log, "-", "+");
  if (reply.kind !== "array") return [];
  return reply.value.map((entry) => {
    const fields = entry.kind === "array" ? strings(entry.value[1] as Reply) : [];
    const at = (name: string) => fields[fields.indexOf(name) + 1] ?? "";
    return [at("id"), at("state")];
  });
}

describe("local hand-off at publish", () => {
  it("stores a due message straight as ACTIVE under the lease, never in the due set", async () => {
    const now = Date.now();
    const t0 = Number(strings(await exec("TIME"))[0]) * 1000;
    await store.enqueue(now, [storeMessage("h-1", now)], undefined, {
      token: "tok",
      leaseMs: 30_000,
    });
    const h = parts().message("h-1");
    expect(strings(await exec("HMGET", h, "state", "lease", "retried", "origin"))).toEqual([
      "ACTIVE",
      "tok",
      "0",
      "http://127.0.0.1:9",
    ]);
    expect(text(await exec("ZSCORE", parts().due, "h-1"))).toBe("");
    expect(text(await exec("ZSCORE", parts().pending, "h-1"))).toBe(String(now));
    // The lease deadline is on Redis's clock: its TIME plus the lease.
    const deadline = Number(text(await exec("ZSCORE", parts().active, "h-1")));
    expect(deadline).toBeGreaterThanOrEqual(t0 + 30_000);
    expect(deadline).toBeLessThan(t0 + 30_000 + 5_000);
    expect(await events()).toEqual([
      ["h-1", "CREATED"],
      ["h-1", "ACTIVE"],
    ]);
  });

  it("stores messages due later, and flow-controlled ones, as before even with a lease", async () => {
    const now = Date.now();
    const fc = { key: "k", parallelism: 0, rate: 0, period: 1 };
    const lease = { token: "tok", leaseMs: 30_000 };
    await store.enqueue(now, [storeMessage("later", now + 60_000)], undefined, lease);
    await store.enqueue(now, [storeMessage("fc-1", now, { flowControl: fc })], undefined, lease);
    const states = await store.getMany(["later", "fc-1"]);
    expect(states.map((m) => m.state)).toEqual(["CREATED", "CREATED"]);
    expect(text(await exec("ZSCORE", parts().due, "later"))).toBe(String(now + 60_000));
    // The flow-control key (no limits) admitted its message into the due set at once.
    expect(text(await exec("ZSCORE", parts().due, "fc-1"))).toBe(String(now));
    expect(text(await exec("ZCARD", parts().active))).toBe("0");
  });

  it("costs its Redis 15 commands for two messages published and 8 per delivery recorded", async () => {
    const now = Date.now();
    const lease = { token: "tok", leaseMs: 30_000 };
    await exec("CONFIG", "RESETSTAT");
    await Promise.all([
      store.enqueue(now, [storeMessage("c-1", now)], undefined, lease),
      store.enqueue(now, [storeMessage("c-2", now)], undefined, lease),
    ]);
    // Per message HSET, ZADD pending, ZADD active, XADD CREATED, XADD ACTIVE, and one RPUSH and
    // PEXPIRE of its log index for both events; one TIME and one slot probe (EXISTS) per call.
    const stored = await commandCounts();
    expect(stored).toEqual({ hset: 2, zadd: 4, xadd: 4, rpush: 2, pexpire: 2, time: 1, exists: 1 });
    await exec("CONFIG", "RESETSTAT");
    const finish = (id: string) =>
      store.finish(now, { id, token: "tok", outcome: "DELIVERED", attempt: "{}", children: [] });
    await Promise.all([finish("c-1"), finish("c-2")]);
    // Per delivery: the slot probe, one HMGET, ZREM active, XADD DELIVERED with its index's RPUSH
    // and PEXPIRE, DEL, ZREM pending.
    const finished = await commandCounts();
    expect(total(finished)).toBe(16);
    expect(finished).toEqual({
      exists: 2,
      hmget: 2,
      zrem: 4,
      xadd: 2,
      rpush: 2,
      pexpire: 2,
      del: 2,
    });
    expect(await store.getMany(["c-1", "c-2"])).toEqual([]);
  });
});
