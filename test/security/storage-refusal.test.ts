import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import { eventually } from "../harness/eventually.js";
import { freePort, startRedis, testPool, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";

/**
 * Issue 25, hole 12: a Redis that refuses writes (MISCONF after a failed snapshot, e.g. a full
 * disk; OOM at maxmemory under noeviction) made KV writes answer 400 as if the request were
 * wrong, and queue writes a 5xx without saying why. Both now answer 507 with Redis's text and a
 * note that the server cannot store (KV at maxmemory: Upstash's `ERR DB capacity quota exceeded`
 * first, managed-memory.test.ts); reads, the health probe and, once Redis stores again,
 * writes keep answering.
 */
let redis: TestRedis;
let admin: RedisPool;
let stashd: TestStashd;
let dir: string;

beforeAll(async () => {
  // A Redis whose RDB snapshot can be made to fail: a directory where the snapshot file goes
  // (renaming the finished snapshot over it fails, even for root).
  dir = mkdtempSync(path.join(os.tmpdir(), "stashd-misconf-"));
  redis = await startRedis(
    [
      "--dir",
      dir,
      "--save",
      "3600 1",
      "--appendonly",
      "yes",
      "--stop-writes-on-bgsave-error",
      "yes",
    ],
    await freePort(),
  );
  admin = testPool(redis.url);
  // One Redis for both, in two database numbers (the same number is refused).
  stashd = await startStashd({ kvRedisUrl: `${redis.url}/0`, queueRedisUrl: `${redis.url}/1` });
});
afterAll(async () => {
  await stashd.stop();
  await admin.close();
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

function publish(): Promise<Response> {
  return fetch(`${stashd.queue.url}/v2/publish/http://127.0.0.1:9/x`, {
    method: "POST",
    headers: { authorization: `Bearer ${stashd.queue.token}`, "upstash-delay": "1h" },
    body: "m",
  });
}

async function expectRefused(res: Response, code: "OOM" | "MISCONF"): Promise<void> {
  expect(res.status).toBe(507);
  const { error } = (await res.json()) as { error: string };
  expect(error).toMatch(new RegExp(`${code} .*the server cannot store data now`));
}

/** A KV write at maxmemory: Upstash's words for a full database, then Redis's. */
async function expectKvFull(res: Response, before = ""): Promise<void> {
  expect(res.status).toBe(507);
  const { error } = (await res.json()) as { error: string };
  expect(error).toMatch(new RegExp(`^${before}ERR DB capacity quota exceeded: .*\\(Redis: OOM `));
}

async function expectServing(): Promise<void> {
  expect((await stashd.kvFetch("/get/kept")).status).toBe(200);
  expect((await fetch(`${stashd.admin?.url ?? ""}/healthz`)).status).toBe(200);
  const keys = await fetch(`${stashd.queue.url}/v2/keys`, {
    headers: { authorization: `Bearer ${stashd.queue.token}` },
  });
  expect(keys.status).toBe(200);
}

describe("a Redis that refuses writes", () => {
  it("answers KV writes and publishes 507 at maxmemory (OOM), 200 again once it has room", async () => {
    expect((await stashd.kvFetch("/set/kept/v")).status).toBe(200);
    await admin.exec(["CONFIG", "SET", "maxmemory", "1"]);
    try {
      await expectKvFull(await stashd.kvFetch("/set/k/v"));
      await expectKvFull(
        await stashd.kvFetch("/multi-exec", { body: JSON.stringify([["SET", "a", "b"]]) }),
        "EXECABORT .*",
      );
      const pipeline = await stashd.kvFetch("/pipeline", {
        body: JSON.stringify([["SET", "a", "b"]]),
      });
      expect(pipeline.status).toBe(200);
      expect(((await pipeline.json()) as { error: string }[])[0]?.error).toMatch(
        /^ERR DB capacity quota exceeded: /,
      );
      await expectRefused(await publish(), "OOM");
      await expectServing();
    } finally {
      await admin.exec(["CONFIG", "SET", "maxmemory", "0"]);
    }
    expect((await stashd.kvFetch("/set/k/v")).status).toBe(200);
    expect((await publish()).status).toBe(201);
  });

  it("answers KV writes and publishes 507 after a failed snapshot (MISCONF)", async () => {
    mkdirSync(path.join(dir, "dump.rdb", "blocker"), { recursive: true });
    try {
      await admin.exec(["BGSAVE"]);
      await eventually(async () => {
        const info = await admin.exec(["INFO", "persistence"]);
        expect(info.kind === "bulk" && info.value.toString()).toMatch(/rdb_last_bgsave_status:err/);
      });
      await expectRefused(await stashd.kvFetch("/set/k/v"), "MISCONF");
      await expectRefused(await publish(), "MISCONF");
      await expectServing();
    } finally {
      rmSync(path.join(dir, "dump.rdb"), { recursive: true, force: true });
    }
    expect((await admin.exec(["BGSAVE"])).kind).toBe("simple");
    await eventually(async () => expect((await stashd.kvFetch("/set/k/v")).status).toBe(200));
    expect((await publish()).status).toBe(201);
  });
});
