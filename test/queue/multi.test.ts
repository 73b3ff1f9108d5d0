import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { readQueueCredentials } from "../../src/queue/credentials.js";
import { parseRedisUrl } from "../../src/shared/redis/connection.js";
import { RedisPool } from "../../src/shared/redis/pool.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { startReceiver, type TestReceiver } from "./receiver.js";
import { FAST_QUEUE, sharedQueueOptions } from "./setup.js";

/** Two stashd processes (in-process instances) sharing one queue Redis. */
let redis: TestRedis;
let a: TestStashd;
let b: TestStashd;
let rx: TestReceiver;

beforeAll(async () => {
  redis = await startRedis();
  const shared = sharedQueueOptions(redis.url);
  a = await startStashd(shared);
  b = await startStashd(shared);
  rx = await startReceiver(() => ({ current: "sig_current", next: "sig_next" }));
  rx.delayMs = 5;
});
afterAll(async () => {
  await rx?.close();
  await a?.stop();
  await b?.stop();
  await redis?.stop();
});

describe("several processes on one Redis", () => {
  it("delivers each message once, whichever process accepted it", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) {
      const target = i % 2 === 0 ? a : b;
      const res = await fetch(`${target.queue.url}/v2/publish/${rx.url}/m`, {
        method: "POST",
        headers: { authorization: "Bearer dG9rZW4=" },
        body: String(i),
      });
      expect(res.status).toBe(201);
      ids.push(((await res.json()) as { messageId: string }).messageId);
    }
    await eventually(async () => {
      const res = await fetch(`${a.queue.url}/v2/logs?state=DELIVERED&count=1000`, {
        headers: { authorization: "Bearer dG9rZW4=" },
      });
      expect(((await res.json()) as { logs: unknown[] }).logs).toHaveLength(60);
    });
    const active = await fetch(`${b.queue.url}/v2/logs?state=ACTIVE&count=1000`, {
      headers: { authorization: "Bearer dG9rZW4=" },
    });
    expect(((await active.json()) as { logs: unknown[] }).logs).toHaveLength(60);
    const seen = rx.requests.map((r) => String(r.headers["upstash-message-id"]));
    expect(seen.sort()).toEqual([...ids].sort());
    expect(rx.requests.every((r) => r.signatureError === undefined)).toBe(true);
  });

  it("reloads its scripts after the Redis script cache was flushed", async () => {
    const pool = new RedisPool(parseRedisUrl(redis.url), {
      size: 1,
      connectTimeoutMs: 1000,
      retryBackoffMs: 50,
    });
    await pool.exec(["SCRIPT", "FLUSH"]);
    await pool.close();
    const before = rx.requests.length;
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        fetch(`${a.queue.url}/v2/publish/${rx.url}/f`, {
          method: "POST",
          headers: { authorization: "Bearer dG9rZW4=" },
          body: `f${i}`,
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(results.map(() => 201));
    await eventually(() => expect(rx.requests.length).toBe(before + 20));
  });

  it("a process without configured keys takes the shared keys from Redis", async () => {
    const c = await startStashd({ queueRedisUrl: redis.url, ...FAST_QUEUE });
    try {
      expect(c.queue.currentSigningKey).toBe("sig_current");
      const file = readQueueCredentials({ ...c.config });
      expect(file).toMatchObject({ currentSigningKey: "sig_current", nextSigningKey: "sig_next" });
    } finally {
      await c.stop();
    }
  });

  it("serves the configured credentials from both processes", async () => {
    for (const s of [a, b]) {
      const res = await fetch(`${s.queue.url}/v2/keys`, {
        headers: { authorization: "Bearer dG9rZW4=" },
      });
      expect(await res.json()).toEqual({ current: "sig_current", next: "sig_next" });
    }
  });
});
