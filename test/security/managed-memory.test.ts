import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { credentialsOf } from "../../src/kv/databases/database-manager.js";
import {
  createDatabase,
  managedDir,
  readRegistry,
  registryFile,
} from "../../src/kv/databases/registry.js";
import { writeJsonFile } from "../../src/shared/files.js";
import { eventually } from "../harness/eventually.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { bodyOf } from "../kv/helpers.js";

/**
 * A managed database's writers could fill the machine's memory: its redis-server had no
 * `maxmemory`, so the standard token could grow it, 10 MB per request, until the kernel's OOM
 * killer took a process (the queue's Redis or stashd itself as likely as the culprit). And
 * APPEND, or a script's SETRANGE, grew one string past Upstash's max record size, which the
 * policy's offset check (argument-sized-work.test.ts) cannot see. Now each managed Redis runs
 * with `maxmemory` (STASHD_KV_MAX_DATA_BYTES, per database `--max-data-size`) under noeviction,
 * and `proto-max-bulk-len` at the record size: past them writes are refused in Upstash's words
 * while reads and deletes go on.
 */

const MIB = 1024 * 1024;
let stashd: TestStashd;

beforeAll(async () => {
  stashd = await startStashd({
    services: ["kv"],
    kvMaxDataBytes: 8 * MIB,
    kvMaxRecordBytes: MIB,
    kvMaxRequestBytes: MIB,
  });
});
afterAll(async () => {
  await stashd.stop();
});

async function run(argv: unknown[], token = stashd.kv.token): Promise<[number, unknown]> {
  const res = await stashd.kvFetch("/", { body: JSON.stringify(argv), token });
  return [res.status, await bodyOf(res)];
}

/** Writes 256 KiB values under `prefix` until one is refused; answers it and the keys written. */
async function fillUntilRefused(
  prefix: string,
  token?: string,
  write = (key: string, value: string): unknown[] => ["SET", key, value],
): Promise<[number, unknown, string[]]> {
  const value = "v".repeat(256 * 1024);
  const written: string[] = [];
  for (let i = 0; i < 200; i++) {
    const [status, body] = await run(write(`${prefix}${i}`, value), token);
    if (status !== 200) return [status, body, written];
    written.push(`${prefix}${i}`);
  }
  throw new Error("200 writes of 256 KiB (50 MiB) were all accepted");
}

/** Changes a database's max data size in the registry, as an operator editing it would. */
function setMaxDataBytes(name: string, bytes: number): void {
  const records = readRegistry(stashd.dataDir).map((r) =>
    r.name === name ? { ...r, maxDataBytes: bytes } : r,
  );
  writeJsonFile(registryFile(stashd.dataDir), records);
}

function expectCapacityRefusal([status, body]: [number, unknown, string[]]): void {
  expect(status).toBe(507);
  expect((body as { error: string }).error).toMatch(
    /^ERR DB capacity quota exceeded: .*reads and deletes still work.*\(Redis: OOM /,
  );
}

describe("a managed database's memory", () => {
  it("refuses writes past its max data size, keeps reads and deletes, and writes again once there is room", async () => {
    const refused = await fillUntilRefused("fill:");
    expectCapacityRefusal(refused);
    const written = refused[2];
    expect(written.length).toBeGreaterThan(8); // about 8 MiB of 256 KiB values, less Redis's own
    const [readStatus, read] = await run(["STRLEN", "fill:0"]);
    expect([readStatus, read]).toEqual([200, { result: 256 * 1024 }]);
    const pipeline = await stashd.kvFetch("/pipeline", {
      body: JSON.stringify([
        ["GET", "missing"],
        ["SET", "more", "x".repeat(256 * 1024)],
      ]),
    });
    const replies = (await pipeline.json()) as { result?: unknown; error?: string }[];
    expect(replies[0]).toEqual({ result: null });
    expect(replies[1]?.error).toMatch(/^ERR DB capacity quota exceeded/);
    // A script cannot lift the limit with Redis's allow-oom flag: stashd strips it (without that,
    // every one of these writes is accepted), and refuses a quoted shebang, which Redis unquotes.
    const grow = "return redis.call('SET', KEYS[1], ARGV[1])";
    const refusedScript = await fillUntilRefused("script:", undefined, (key, value) => [
      "EVAL",
      `#!lua flags=allow-oom\n${grow}`,
      "1",
      key,
      value,
    ]);
    expectCapacityRefusal(refusedScript);
    expect(refusedScript[2].length).toBeLessThan(4);
    written.push(...refusedScript[2]);
    const quoted = await run(["EVAL", `#!lua "flags=allow-oom"\n${grow}`, "1", "s2", "x"]);
    expect(quoted[0]).toBe(400);
    expect((quoted[1] as { error: string }).error).toMatch(/^ERR quotes in a script's shebang/);
    // DEL still works at the limit (on Redis 7.0 it runs in stashd's field-TTL script).
    expect(await run(["DEL", ...written])).toEqual([200, { result: written.length }]);
    expect(await run(["SET", "after", "v"])).toEqual([200, { result: "OK" }]);
  });

  it("writes the limits into the managed redis-server's configuration", () => {
    const conf = readFileSync(
      path.join(managedDir(stashd.dataDir, "default"), "redis.conf"),
      "utf8",
    );
    expect(conf).toMatch(new RegExp(`^maxmemory ${8 * MIB}$`, "m"));
    expect(conf).toMatch(/^maxmemory-policy noeviction$/m);
    expect(conf).toMatch(new RegExp(`^proto-max-bulk-len ${MIB}$`, "m"));
  });

  it("holds APPEND, and a script's SETRANGE, to the max record size", async () => {
    expect((await run(["FLUSHDB"]))[0]).toBe(200);
    const half = "a".repeat(600 * 1024);
    expect((await run(["APPEND", "rec", half]))[0]).toBe(200);
    const [status, body] = await run(["APPEND", "rec", half]);
    expect(status).toBe(400);
    expect((body as { error: string }).error).toMatch(/^ERR max single record size exceeded/);
    expect(await run(["STRLEN", "rec"])).toEqual([200, { result: 600 * 1024 }]);
    const script = "return redis.call('SETRANGE', KEYS[1], 2 * 1024 * 1024, 'x')";
    const [evalStatus, evalBody] = await run(["EVAL", script, "1", "rec2"]);
    expect(evalStatus).toBe(400);
    expect((evalBody as { error: string }).error).toMatch(/string exceeds maximum allowed size/);
    expect(await run(["EXISTS", "rec2"])).toEqual([200, { result: 0 }]);
  });
});

describe("per database", () => {
  it("takes --max-data-size at creation, and a changed one while running", async () => {
    const record = createDatabase(stashd.dataDir, "small", { maxDataBytes: 4 * MIB });
    const token = credentialsOf(record).token;
    await eventually(async () =>
      expect(await run(["PING"], token)).toEqual([200, { result: "PONG" }]),
    );
    const first = await fillUntilRefused("s:", token);
    expectCapacityRefusal(first);
    // Its own limit, not the default's: refused after about 4 MiB, not 8.
    expect(first[2].length).toBeLessThan(16);

    setMaxDataBytes("small", 64 * MIB);
    await eventually(async () =>
      expect(await run(["SET", "s:more", "x".repeat(256 * 1024)], token)).toEqual([
        200,
        { result: "OK" },
      ]),
    );
  });
});

describe("a database created with --eviction", () => {
  it("drops keys at its max data size instead of refusing writes, and refuses again once eviction is turned off", async () => {
    const record = createDatabase(stashd.dataDir, "cache", {
      maxDataBytes: 4 * MIB,
      eviction: true,
    });
    const token = credentialsOf(record).token;
    await eventually(async () => expect((await run(["PING"], token))[0]).toBe(200));
    const value = "c".repeat(256 * 1024);
    // 60 writes of 256 KiB (15 MiB) into 4 MiB: all accepted, the database stays at its size.
    // (Redis's LRU clock ticks once a second, so within this test which keys go is not ordered.)
    for (let i = 0; i < 60; i++) {
      expect(await run(["SET", `c:${i}`, value], token)).toEqual([200, { result: "OK" }]);
    }
    const [, size] = await run(["DBSIZE"], token);
    expect((size as { result: number }).result).toBeLessThan(20);
    expect(await run(["STRLEN", "c:59"], token)).toEqual([200, { result: value.length }]);
    const conf = readFileSync(path.join(managedDir(stashd.dataDir, "cache"), "redis.conf"), "utf8");
    expect(conf).toMatch(/^maxmemory-policy allkeys-lru$/m);

    const records = readRegistry(stashd.dataDir).map((r) =>
      r.name === "cache" ? { ...r, eviction: false } : r,
    );
    writeJsonFile(registryFile(stashd.dataDir), records);
    await eventually(async () => expectCapacityRefusal(await fillUntilRefused("n:", token)));
  });
});

describe("over the limit", () => {
  it("still runs DEL, UNLINK, HDEL, JSON.DEL, VECTOR.DEL and DROP (some run in stashd's scripts)", async () => {
    const record = createDatabase(stashd.dataDir, "over", { maxDataBytes: 8 * MIB });
    const token = credentialsOf(record).token;
    await eventually(async () => expect((await run(["PING"], token))[0]).toBe(200));
    expect((await run(["HSET", "h", "a", "1", "b", "2"], token))[0]).toBe(200);
    expect((await run(["HEXPIRE", "h", "100", "FIELDS", "1", "b"], token))[0]).toBe(200);
    const doc = JSON.stringify({ keep: 1, drop: "x".repeat(1000), also: [1, 2] });
    expect(await run(["JSON.SET", "doc", "$", doc], token)).toEqual([200, { result: "OK" }]);
    expect((await run(["VECTOR.CREATE", "vi", "DIM", "2", "METRIC", "COSINE"], token))[0]).toBe(
      200,
    );
    for (const id of ["a", "b"]) {
      expect((await run(["VECTOR.ADD", "vi", id, "VALUES", "2", "0.5", "1"], token))[0]).toBe(200);
    }
    const [, , written] = await fillUntilRefused("o:", token);
    // Lowered below what the database holds: now every write is refused, whatever its size.
    setMaxDataBytes("over", 2 * MIB);
    await eventually(async () => expect((await run(["SET", "tiny", "x"], token))[0]).toBe(507));
    expect(await run(["HDEL", "h", "a", "b"], token)).toEqual([200, { result: 2 }]);
    // JSON.DEL of a path rewrites the document in stashd's JSON script (no JSON module here).
    expect(await run(["JSON.DEL", "doc", "$.drop"], token)).toEqual([200, { result: 1 }]);
    expect(await run(["JSON.FORGET", "doc", "$.also[0]"], token)).toEqual([200, { result: 1 }]);
    expect(await run(["JSON.GET", "doc", "$"], token)).toEqual([
      200,
      { result: JSON.stringify([{ keep: 1, also: [2] }]) },
    ]);
    expect((await run(["JSON.SET", "doc", "$.more", "1"], token))[0]).toBe(507);
    // VECTOR.DEL and DROP run in stashd's vector script.
    expect((await run(["VECTOR.ADD", "vi", "c", "VALUES", "2", "1", "0"], token))[0]).toBe(507);
    expect(await run(["VECTOR.DEL", "vi", "a"], token)).toEqual([200, { result: 1 }]);
    expect(await run(["VECTOR.DROP", "vi"], token)).toEqual([200, { result: 1 }]);
    expect(await run(["UNLINK", ...written.slice(1)], token)).toEqual([
      200,
      { result: written.length - 1 },
    ]);
    expect(await run(["DEL", written[0]], token)).toEqual([200, { result: 1 }]);
    await eventually(async () =>
      expect(await run(["SET", "tiny", "x"], token)).toEqual([200, { result: "OK" }]),
    );
  });
});
