import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.js";
import { startQueueService } from "../../src/queue/service.js";
import { createLogger } from "../../src/shared/log.js";
import { eventually } from "../harness/eventually.js";
import { freePort, startRedis, testPool, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";

/**
 * Issue 25, hole 9: a queue Redis that evicts keys (`maxmemory-policy` other than noeviction) or
 * does not persist loses acknowledged messages silently. stashd refuses to start on one (unless
 * STASHD_QUEUE_ALLOW_UNSAFE_REDIS), and when one becomes unsafe while running, refuses writes
 * with 503 and reports it on /readyz until it is fixed.
 */

/** A Redis of its own (never a shared REDIS_URL: the tests change its config). */
const ownRedis = async (...args: string[]): Promise<TestRedis> =>
  startRedis(args, await freePort());
const PERSISTENT = ["--appendonly", "yes"];

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function strictStashd(redis: TestRedis, checkMs = 10_000): Promise<TestStashd> {
  const stashd = await startStashd({
    queueRedisUrl: redis.url,
    queueAllowUnsafeRedis: false,
    queueStoreCheckMs: checkMs,
  });
  cleanups.push(() => stashd.stop());
  return stashd;
}

function publish(stashd: TestStashd): Promise<Response> {
  return fetch(`${stashd.queue.url}/v2/publish/http://127.0.0.1:9/x`, {
    method: "POST",
    headers: { authorization: `Bearer ${stashd.queue.token}`, "upstash-delay": "1h" },
    body: "hello",
  });
}

async function readyz(stashd: TestStashd) {
  const res = await fetch(`${stashd.admin?.url ?? ""}/readyz`);
  return { status: res.status, body: (await res.json()) as { checks: Record<string, string> } };
}

describe("a queue Redis that may lose acknowledged messages", () => {
  it("is refused at start when it evicts keys (allkeys-lru), naming the setting", async () => {
    const redis = await ownRedis(...PERSISTENT, "--maxmemory-policy", "allkeys-lru");
    cleanups.push(() => redis.stop());
    await expect(strictStashd(redis)).rejects.toThrow(
      /maxmemory-policy is allkeys-lru.*set maxmemory-policy noeviction.*STASHD_QUEUE_ALLOW_UNSAFE_REDIS=true/,
    );
  });

  it("is refused at start when neither AOF nor RDB snapshots are on", async () => {
    const redis = await ownRedis("--appendonly", "no", "--save", "");
    cleanups.push(() => redis.stop());
    await expect(strictStashd(redis)).rejects.toThrow(/persistence is off.*set appendonly yes/);
  });

  it("is checked through INFO when CONFIG is refused by an ACL", async () => {
    const redis = await ownRedis(...PERSISTENT, "--maxmemory-policy", "volatile-lru");
    cleanups.push(() => redis.stop());
    const admin = testPool(redis.url);
    const acl = ["ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-config"];
    expect((await admin.exec(acl)).kind).toBe("simple");
    await admin.close();
    const url = redis.url.replace("redis://", "redis://app:pw@");
    await expect(strictStashd({ ...redis, url }).then((s) => s.queue.url)).rejects.toThrow(
      /maxmemory-policy is volatile-lru/,
    );
  });

  it("starts when neither CONFIG nor INFO may be read (it cannot tell; a warning)", async () => {
    const redis = await ownRedis("--maxmemory-policy", "allkeys-lru");
    cleanups.push(() => redis.stop());
    const admin = testPool(redis.url);
    const acl = ["ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-config", "-info"];
    expect((await admin.exec(acl)).kind).toBe("simple");
    await admin.close();
    const stashd = await strictStashd({
      ...redis,
      url: redis.url.replace("redis://", "redis://app:pw@"),
    });
    expect((await publish(stashd)).status).toBe(201);
  });

  it("starts with a warning when STASHD_QUEUE_ALLOW_UNSAFE_REDIS is set", async () => {
    const redis = await ownRedis("--appendonly", "no", "--save", "");
    cleanups.push(() => redis.stop());
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-unsafe-"));
    cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
    const lines: string[] = [];
    const log = createLogger("warn", "test", { format: "json", write: (l) => lines.push(l) });
    const config = loadConfig(
      {
        dataDir,
        host: "127.0.0.1",
        queuePort: 0,
        queueRedisUrl: redis.url,
        queueAllowUnsafeRedis: true,
      },
      {},
    );
    const queue = await startQueueService(config, log);
    cleanups.push(() => queue.close());
    const warned = lines.map((l) => JSON.parse(l) as { level: string; msg: string });
    expect(warned).toContainEqual(
      expect.objectContaining({
        level: "warn",
        msg: expect.stringContaining("allowed by STASHD_QUEUE_ALLOW_UNSAFE_REDIS") as string,
      }),
    );
    expect(queue.storeRefusal()).toBeUndefined();
  });

  it("refuses writes with 503 and is not ready while CONFIG SET makes it unsafe, until fixed", async () => {
    const redis = await ownRedis(...PERSISTENT);
    cleanups.push(() => redis.stop());
    const stashd = await strictStashd(redis, 50);
    expect((await publish(stashd)).status).toBe(201);
    expect(await readyz(stashd)).toMatchObject({ status: 200 });

    const admin = testPool(redis.url);
    cleanups.push(() => admin.close());
    await admin.exec(["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
    await eventually(async () => {
      const res = await publish(stashd);
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: string }).error).toMatch(
        /refuses writes.*maxmemory-policy is allkeys-lru/,
      );
    });
    const notReady = await readyz(stashd);
    expect(notReady.status).toBe(503);
    expect(notReady.body.checks["queue-store"]).toMatch(/maxmemory-policy is allkeys-lru/);
    // Reads, the health probe and the KV gateway keep answering.
    expect((await fetch(`${stashd.admin?.url ?? ""}/healthz`)).status).toBe(200);
    const keys = await fetch(`${stashd.queue.url}/v2/keys`, {
      headers: { authorization: `Bearer ${stashd.queue.token}` },
    });
    expect(keys.status).toBe(200);
    expect((await stashd.kvFetch("/set/k/v")).status).toBe(200);

    await admin.exec(["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    await eventually(async () => expect((await publish(stashd)).status).toBe(201));
    expect(await readyz(stashd)).toMatchObject({ status: 200 });
  });
});
