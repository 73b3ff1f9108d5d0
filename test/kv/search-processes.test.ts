import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Redis, s } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisConnection, parseRedisUrl } from "../../src/shared/redis/connection.js";
import { eventually } from "../harness/eventually.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { endOrphanedRedis, spawnStashdKeepingStderr, whenRunning } from "../harness/process.js";

/**
 * SEARCH with several stashd processes on one Redis (each keeps its own index, derived from
 * Redis), a process killed with SIGKILL while it indexes, and the bounds on memory and time
 * (docs/search.md, "Limits").
 */
let redis: TestRedis;
let a: TestStashd;
let b: TestStashd;
const sdk = (st: TestStashd) => new Redis({ url: st.kv.url, token: st.kv.token });

beforeAll(async () => {
  redis = await startRedis();
  a = await startStashd({ kvRedisUrl: redis.url, services: ["kv"] });
  b = await startStashd({ kvRedisUrl: redis.url, services: ["kv"], searchQueryTimeLimitMs: 1 });
});
afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await redis?.stop();
});

/** HSETs of `count` documents `{prefix}{i}` straight to Redis, pipelined. */
async function writeDocs(
  prefix: string,
  count: number,
  words = (i: number) => `word${i} common`,
): Promise<void> {
  const conn = await RedisConnection.open(parseRedisUrl(redis.url), 2000);
  try {
    const commands = Array.from({ length: count }, (_, i) => [
      "HSET",
      `${prefix}${i}`,
      "text",
      words(i),
      "n",
      String(i),
    ]);
    for (let i = 0; i < commands.length; i += 1000)
      await conn.sendMany(commands.slice(i, i + 1000));
  } finally {
    conn.destroy();
  }
}

const schema = s.object({ text: s.string(), n: s.number("U64") });

describe("a managed Redis", () => {
  it("serves SEARCH on stashd's own redis-server", async () => {
    const st = await startStashd({ services: ["kv"] });
    try {
      const name = `managed-${Date.now()}`;
      const index = await sdk(st).search.createIndex({
        name,
        schema,
        dataType: "hash",
        prefix: `${name}:`,
      });
      await sdk(st).hset(`${name}:1`, { text: "on the managed redis", n: 1 });
      expect(await index.waitIndexing()).toBe(1);
      expect(await index.count({ filter: { text: "managed" } })).toEqual({ count: 1 });
    } finally {
      await st.stop();
    }
  });
});

describe("two stashd processes on one Redis", () => {
  it("see each other's indexes, writes, drops and re-creations", async () => {
    const name = `two-${Date.now()}`;
    await sdk(a).search.createIndex({ name, schema, dataType: "hash", prefix: `${name}:` });
    await sdk(a).hset(`${name}:1`, { text: "hello from a", n: 1 });
    await sdk(b).hset(`${name}:2`, { text: "hello from b", n: 2 });
    for (const st of [a, b]) {
      const index = sdk(st).search.index({ name });
      expect(await index.waitIndexing()).toBe(1);
      expect(await index.count({ filter: { text: "hello" } })).toEqual({ count: 2 });
    }
    await sdk(b).del(`${name}:1`);
    await sdk(a).search.index({ name }).waitIndexing();
    expect(await sdk(a).search.index({ name }).count({ filter: {} })).toEqual({ count: 1 });

    expect(await sdk(a).search.index({ name }).drop()).toBe(1);
    expect(await sdk(b).search.index({ name }).query()).toBeNull();
    const other = s.object({ text: s.keyword() });
    await sdk(b).search.createIndex({ name, schema: other, dataType: "hash", prefix: `${name}:` });
    const described = await sdk(a).search.index({ name }).describe();
    expect(described?.schema).toEqual({ text: { type: "KEYWORD" } });
    expect(
      await sdk(a)
        .search.index({ name })
        .count({ filter: { text: "hello from b" } }),
    ).toEqual({ count: 1 });
  });
});

describe("bounds", () => {
  it("an index past STASHD_SEARCH_MAX_DOCUMENTS answers with an error", async () => {
    const name = `full-${Date.now()}`;
    await writeDocs(`${name}:`, 60);
    const small = await startStashd({
      kvRedisUrl: redis.url,
      services: ["kv"],
      searchMaxDocuments: 50,
    });
    try {
      await sdk(small).search.createIndex({ name, schema, dataType: "hash", prefix: `${name}:` });
      const index = sdk(small).search.index({ name });
      await index.waitIndexing();
      await expect(index.count({ filter: {} })).rejects.toThrow("STASHD_SEARCH_MAX_DOCUMENTS");
      // The other process, with the default limit, serves the same index.
      expect(await sdk(a).search.index({ name }).count({ filter: {} })).toEqual({ count: 60 });
      // Back within the limit, the next rescan lets it answer again.
      await sdk(small).del(...Array.from({ length: 20 }, (_, i) => `${name}:${i}`));
      expect(await sdk(small).exec(["SEARCH.REINDEX", name])).toBe("OK");
      expect(await index.count({ filter: {} })).toEqual({ count: 40 });
    } finally {
      await small.stop();
    }
  });

  it("a page of documents past STASHD_KV_MAX_REPLY_BYTES answers with an error", async () => {
    const name = `big-${Date.now()}`;
    const st = await startStashd({
      kvRedisUrl: redis.url,
      services: ["kv"],
      kvMaxReplyBytes: 4096,
    });
    try {
      await writeDocs(`${name}:`, 20, (i) => `long ${"text ".repeat(100)}${i}`);
      const index = await sdk(st).search.createIndex({
        name,
        schema,
        dataType: "hash",
        prefix: `${name}:`,
      });
      await index.waitIndexing();
      await expect(index.query({ filter: { text: "long" }, limit: 20 })).rejects.toThrow(
        "STASHD_KV_MAX_REPLY_BYTES",
      );
      expect(await index.query({ filter: { text: "long" }, limit: 20, select: {} })).toHaveLength(
        20,
      );
    } finally {
      await st.stop();
    }
  });

  it("a query past STASHD_SEARCH_QUERY_TIME_LIMIT_MS, or a huge regex, answers with an error", async () => {
    const name = `slow-${Date.now()}`;
    await writeDocs(`${name}:`, 5_000, (i) => `term${i.toString(36)}x${(i * 7919).toString(36)}`);
    await sdk(a).search.createIndex({ name, schema, dataType: "hash", prefix: `${name}:` });
    await sdk(a).search.index({ name }).waitIndexing();
    const hostile = { text: { $fuzzy: { value: "zzzzzzzz", distance: 2, prefix: true } } };
    // b (1 ms) gives up; a (2 s) answers; neither blocks the other requests for long.
    await expect(
      sdk(b)
        .search.index({ name })
        .query({ filter: hostile } as never),
    ).rejects.toThrow("STASHD_SEARCH_QUERY_TIME_LIMIT_MS");
    await expect(
      sdk(a)
        .search.index({ name })
        .query({ filter: hostile } as never),
    ).resolves.toBeDefined();
    await expect(
      sdk(a)
        .search.index({ name })
        .query({ filter: { text: { $regex: "a".repeat(2000) } } } as never),
    ).rejects.toThrow("longer than 1000");
    const page = await sdk(a)
      .search.index({ name })
      .query({
        filter: { text: { $regex: "term.*" } },
        limit: 1000,
        highlight: { fields: ["text"] },
      } as never);
    expect(page).toHaveLength(1000);
  }, 60_000);
});

describe("lost notifications", () => {
  it("a dropped subscriber connection is followed by a rescan that catches up", async () => {
    const name = `lost-${Date.now()}`;
    await sdk(a).search.createIndex({ name, schema, dataType: "hash", prefix: `${name}:` });
    const index = sdk(a).search.index({ name });
    await index.waitIndexing();
    const conn = await RedisConnection.open(parseRedisUrl(redis.url), 2000);
    try {
      await conn.send(["CLIENT", "KILL", "TYPE", "pubsub"]);
      await conn.send(["HSET", `${name}:1`, "text", "written while nobody listened", "n", "1"]);
    } finally {
      conn.destroy();
    }
    // No WAITINDEXING: the reconnection's rescan alone must find the key.
    await eventually(async () =>
      expect(await index.count({ filter: { text: "nobody" } })).toEqual({ count: 1 }),
    );
  });

  it("without keyspace notifications (CONFIG refused), WAITINDEXING rescans", async () => {
    const bare = await startRedis(["--rename-command", "CONFIG", ""]);
    const st = await startStashd({ kvRedisUrl: bare.url, services: ["kv"] });
    try {
      const name = `noconfig-${Date.now()}`;
      const index = await sdk(st).search.createIndex({
        name,
        schema,
        dataType: "hash",
        prefix: `${name}:`,
      });
      await sdk(st).hset(`${name}:1`, { text: "seen by a rescan", n: 1 });
      expect(await index.waitIndexing()).toBe(1);
      expect(await index.count({ filter: { text: "rescan" } })).toEqual({ count: 1 });
      await sdk(st).del(`${name}:1`);
      await index.waitIndexing();
      expect(await index.count({ filter: {} })).toEqual({ count: 0 });
    } finally {
      await st.stop();
      await bare.stop();
    }
  });
});

describe("SIGKILL while indexing", () => {
  it("loses no definition: another process builds the index from Redis", async () => {
    const name = `killed-${Date.now()}`;
    await writeDocs(`${name}:`, 20_000);
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-search-kill-"));
    const proc = spawnStashdKeepingStderr(dataDir, {
      env: {
        PATH: process.env.PATH,
        STASHD_KV_REDIS_URL: redis.url,
        STASHD_QUEUE_ALLOW_UNSAFE_REDIS: "true",
      },
    });
    try {
      type Creds = { running: boolean; kv: { databases: { url: string; token: string }[] } };
      const db = (await whenRunning<Creds>(dataDir, proc)).kv.databases[0] as {
        url: string;
        token: string;
      };
      const child = new Redis({ url: db.url, token: db.token });
      await child.search.createIndex({ name, schema, dataType: "hash", prefix: `${name}:` });
      proc.child.kill("SIGKILL"); // its initial scan of 20 000 keys has just started
    } finally {
      proc.child.kill("SIGKILL");
      // Its managed queue redis-server outlives a SIGKILLed stashd.
      endOrphanedRedis(dataDir);
      rmSync(dataDir, { recursive: true, force: true });
    }
    const index = sdk(a).search.index({ name });
    expect(await index.waitIndexing()).toBe(1);
    expect(await index.count({ filter: { text: "common" } })).toEqual({ count: 20_000 });
  }, 60_000);
});
