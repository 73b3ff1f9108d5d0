import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisConnection, parseRedisUrl } from "../../src/shared/redis/connection.js";
import { eventually } from "../harness/eventually.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { command } from "../kv/helpers.js";

/**
 * Issue 25, holes 1, 2, 4 and 5 (docs/reliability.md, "Threat model"): Redis itself enforces
 * the gateway's command policy. The standard token runs as an ACL user whose rights are derived
 * from the policy, so a script cannot do what the same command over REST may not; the managed
 * Redis checks RESTORE payloads and bounds the replies it builds; the read-only token runs no
 * Lua unless the operator opts in, and mints no ACL tokens.
 */
let s: TestStashd;
beforeAll(async () => {
  s = await startStashd();
});
afterAll(async () => {
  await s.stop();
});

const standard = (argv: unknown[]) => command(s, argv);
const readonly = (argv: unknown[]) => command(s, argv, { token: s.kv.readonlyToken });
/** Redis's ACL refusal of a command inside a script. */
const refusedInScript = {
  status: 400,
  body: {
    error: expect.stringMatching(/can't (run this command|access at least one of the keys)|NOPERM/),
  },
};

/** Everything an attacker's request must leave working. */
async function stillServing(): Promise<void> {
  expect((await standard(["SET", "rights:alive", "1"])).body).toEqual({ result: "OK" });
  expect((await readonly(["GET", "rights:alive"])).body).toEqual({ result: "1" });
  expect((await fetch(`${s.admin?.url ?? ""}/healthz`)).status).toBe(200);
}

/** A loopback listener that records whether anything connected to it. */
async function listener(): Promise<{ port: number; connected: () => boolean; close(): void }> {
  let connected = false;
  const server = net.createServer((socket) => {
    connected = true;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return { port, connected: () => connected, close: () => server.close() };
}

describe("scripts cannot do what commands may not (hole 4)", () => {
  it("refuses MIGRATE inside EVAL: the listener receives nothing", async () => {
    const target = await listener();
    try {
      await standard(["SET", "rights:mig", "v"]);
      const script = `return redis.call('MIGRATE', '127.0.0.1', '${target.port}', KEYS[1], '0', '500')`;
      expect(await standard(["EVAL", script, "1", "rights:mig"])).toEqual(refusedInScript);
      expect(target.connected()).toBe(false);
      expect((await standard(["GET", "rights:mig"])).body).toEqual({ result: "v" });
    } finally {
      target.close();
    }
  });

  it.each([
    ["SELECT", "return redis.call('SELECT', '1')"],
    ["SWAPDB", "return redis.call('SWAPDB', '0', '1')"],
    ["MOVE", "return redis.call('MOVE', 'rights:k', '1')"],
    ["FLUSHALL", "return redis.call('FLUSHALL')"],
    ["PFDEBUG", "return redis.call('PFDEBUG', 'GETREG', 'rights:hll')"],
  ])("refuses %s inside EVAL and as a function", async (name, script) => {
    expect(await standard(["EVAL", script, "0"])).toEqual(refusedInScript);
    const lib = `#!lua name=rights_${name}\nredis.register_function('rights_${name}', function() ${script} end)`;
    expect((await standard(["FUNCTION", "LOAD", "REPLACE", lib])).status).toBe(200);
    expect(await standard(["FCALL", `rights_${name}`, "0"])).toEqual(refusedInScript);
    await stillServing();
  });

  it("keeps the database's own SELECT, and the SDKs' FLUSHALL empties only this database", async () => {
    expect((await standard(["EVAL", "return redis.call('SELECT', '0')", "0"])).body).toEqual({
      result: "OK",
    });
    await standard(["SET", "rights:gone", "1"]);
    expect((await standard(["FLUSHALL"])).body).toEqual({ result: "OK" });
    expect((await standard(["DBSIZE"])).body).toEqual({ result: 0 });
  });

  it("refuses the cross-database commands over REST too, with the reason", async () => {
    for (const argv of [
      ["SWAPDB", "0", "1"],
      ["MOVE", "k", "1"],
      ["COPY", "a", "b", "DB", "1"],
    ]) {
      expect(await standard(argv)).toEqual({
        status: 400,
        body: { error: expect.stringMatching(/another database number/) },
      });
    }
  });

  it("gives an ACL user a token made no more than the policy allows, whatever its rules", async () => {
    const created = await standard(["ACL", "SETUSER", "rights:evil", "on", ">pw", "~*", "+@all"]);
    expect(created.body).toEqual({ result: "OK" });
    const minted = (await standard(["ACL", "RESTTOKEN", "rights:evil", "pw"])).body as {
      result: string;
    };
    const evil = (argv: unknown[]) => command(s, argv, { token: minted.result });
    expect((await evil(["SET", "rights:e", "1"])).body).toEqual({ result: "OK" });
    const migrate = "return redis.call('MIGRATE', '127.0.0.1', '1', KEYS[1], '0', '100')";
    expect(await evil(["EVAL", migrate, "1", "rights:e"])).toEqual(refusedInScript);
    expect(await evil(["EVAL", "return redis.call('FLUSHALL')", "0"])).toEqual(refusedInScript);
    // It cannot change users or read the server's password either.
    expect((await evil(["ACL", "SETUSER", "rights:evil", "+acl"])).body).toEqual({
      error: expect.stringMatching(/NOPERM/),
    });
    expect((await evil(["CONFIG", "GET", "requirepass"])).body).toEqual({
      error: expect.stringMatching(/NOPERM/),
    });
    expect((await standard(["ACL", "DELUSER", "rights:evil"])).body).toEqual({ result: 1 });
  });

  it("refuses ACL selectors, users stashd logs in as, and ACL LOAD", async () => {
    const selector = await standard(["ACL", "SETUSER", "rights:sel", "(+@all ~*)"]);
    expect(selector.body).toEqual({ error: expect.stringMatching(/selectors are not supported/) });
    for (const user of ["default", "default_ro", "stashd_standard"]) {
      expect((await standard(["ACL", "SETUSER", user, "+@all"])).body).toEqual({
        error: `ERR ACL user '${user}' is reserved by stashd`,
      });
      expect((await standard(["ACL", "RESTTOKEN", user, "x"])).body).toEqual({
        error: `ERR ACL user '${user}' is reserved by stashd`,
      });
    }
    // Their password hashes stay hidden.
    expect((await standard(["ACL", "GETUSER", "default"])).body).toEqual({
      error: "ERR ACL user 'default' is reserved by stashd",
    });
    const list = (await standard(["ACL", "LIST"])).body as { result: string[] };
    expect(list.result.some((line) => /^user (default|stashd_standard) /.test(line))).toBe(false);
    expect((await standard(["ACL", "LOAD"])).body).toEqual({
      error: expect.stringMatching(/^ERR Command is not available: 'ACL LOAD'/),
    });
  });

  it("answers CONFIG GET without the server's password", async () => {
    const res = await standard(["CONFIG", "GET", "requirepass"]);
    expect(res.body).toEqual({ result: ["requirepass", ""] });
    expect(await standard(["CONFIG", "GET", "maxmemory-policy"])).toEqual({
      status: 200,
      body: { result: ["maxmemory-policy", "noeviction"] },
    });
  });
});

describe("RESTORE of a crafted payload (hole 1)", () => {
  it("is refused by the managed Redis, which checks payloads, and nothing is stored", async () => {
    await standard(["HSET", "rights:h", "a", "1", "b", "2"]);
    const dumped = await s.kvFetch("/", {
      body: JSON.stringify(["DUMP", "rights:h"]),
      headers: { "upstash-encoding": "base64" },
    });
    const payload = Buffer.from(((await dumped.json()) as { result: string }).result, "base64");
    expect(crc64(payload.subarray(0, -8))).toBe(payload.readBigUInt64LE(payload.length - 8));
    const crafted = corruptListpackCount(payload);
    // Binary arguments go in the path, percent-encoded byte by byte.
    const bytes = [...crafted].map((b) => `%${b.toString(16).padStart(2, "0")}`).join("");
    const res = await s.kvFetch(`/restore/rights:crafted/0/${bytes}`);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: expect.stringMatching(/Bad data format/) });
    expect((await readonly(["EXISTS", "rights:crafted"])).body).toEqual({ result: 0 });
    await stillServing();
  });
});

describe("the read-only token (holes 2 and 5)", () => {
  it("may not mint ACL tokens", async () => {
    await standard(["ACL", "SETUSER", "rights:guess", "on", ">secret", "~*", "+@read"]);
    expect(await readonly(["ACL", "RESTTOKEN", "rights:guess", "secret"])).toEqual({
      status: 400,
      body: { error: "NOPERM the read-only token cannot mint ACL tokens (ACL RESTTOKEN)" },
    });
  });

  it("and the standard token's ACL RESTTOKEN guesses are throttled per user", async () => {
    await standard(["ACL", "SETUSER", "rights:target", "on", ">right", "~*", "+@read"]);
    const guess = (password: string) => standard(["ACL", "RESTTOKEN", "rights:target", password]);
    for (let i = 0; i < 10; i++) {
      expect((await guess(`wrong${i}`)).body).toEqual({
        error: 'ERR Wrong password or user "rights:target" does not exist',
      });
    }
    const res = await s.kvFetch("/", {
      body: JSON.stringify(["ACL", "RESTTOKEN", "rights:target", "right"]),
    });
    expect(res.status).toBe(429);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await res.json()).toEqual({ error: expect.stringMatching(/ACL RESTTOKEN/) });
    // Another user's token is still minted.
    await standard(["ACL", "SETUSER", "rights:other", "on", ">pw", "~*", "+@read"]);
    const other = (await standard(["ACL", "RESTTOKEN", "rights:other", "pw"])).body;
    expect(other).toEqual({ result: expect.stringMatching(/^acl_/) });
    await stillServing();
  });

  it("runs no Lua by default: a backtracking pattern cannot hold the database", async () => {
    const slow = "return string.find(string.rep('a', 30000), '(.-)(.-)(.-)(.-)b')";
    const started = Date.now();
    for (const argv of [
      ["EVAL_RO", slow, "0"],
      ["EVALSHA_RO", "0".repeat(40), "0"],
      ["FCALL_RO", "any", "0"],
    ]) {
      expect(await readonly(argv)).toEqual({
        status: 400,
        body: { error: expect.stringMatching(/^NOPERM the read-only token may not run scripts/) },
      });
    }
    expect(Date.now() - started).toBeLessThan(2_000);
    await stillServing();
  });

  it("cannot make Redis build a reply far past the reply cap", async () => {
    await standard(["SET", "rights:big", "x".repeat(1024 * 1024)]);
    const res = await readonly(["MGET", ...Array<string>(400).fill("rights:big")]);
    expect(res).toEqual({
      status: 503,
      body: { error: expect.stringMatching(/^ERR reply too large: Redis closed the connection/) },
    });
    const info = ((await standard(["INFO", "memory"])).body as { result: string }).result;
    const peak = Number(/used_memory_peak:(\d+)/.exec(info)?.[1]);
    // 400 MiB of reply without the output buffer limit; the limit is 64 MiB.
    expect(peak).toBeLessThan(200 * 1024 * 1024);
    await eventually(stillServing);
  });
});

describe("a Redis shared by the KV database and the queue (hole 3)", () => {
  let shared: TestRedis;
  let both: TestStashd;
  const kv = (argv: unknown[]) => command(both, argv);

  beforeAll(async () => {
    shared = await startRedis(["--appendonly", "yes", "--appendfsync", "always"]);
    both = await startStashd({
      // KV in database 2: both tokens' users may select that number and no other.
      kvRedisUrl: `${shared.url}/2`,
      queueRedisUrl: `${shared.url}/1`,
    });
  });
  afterAll(async () => {
    await both.stop();
    await shared.stop();
  });

  /** The queue's signing keys, read by an operator on database 1. */
  async function queueKeys(): Promise<string[]> {
    const conn = await RedisConnection.open({ ...parseRedisUrl(shared.url), db: 1 }, 2000);
    try {
      const reply = await conn.send(["KEYS", "stashd:{*"]);
      return reply.kind === "array"
        ? reply.value.map((r) => (r.kind === "bulk" ? r.value.toString() : ""))
        : [];
    } finally {
      conn.destroy();
    }
  }

  it("keeps the queue's keys from KV scripts, and FLUSHALL empties only the KV database", async () => {
    const before = await queueKeys();
    expect(before.length).toBeGreaterThan(0);
    const key = before.find((k) => k.endsWith(":keys")) ?? (before[0] as string);
    for (const script of [
      `redis.call('SELECT', '1') return redis.call('GET', 'anything')`,
      `return redis.call('COPY', 'a', '${key}', 'DB', '1', 'REPLACE')`,
      `return redis.call('GET', '${key}')`,
      "return redis.call('FLUSHALL')",
    ]) {
      expect(await kv(["EVAL", script, "0"])).toEqual(refusedInScript);
    }
    expect((await kv(["SET", "shared:k", "v"])).body).toEqual({ result: "OK" });
    const ro = await command(both, ["GET", "shared:k"], { token: both.kv.readonlyToken });
    expect(ro.body).toEqual({ result: "v" });
    const roQueue = await command(both, ["GET", key], { token: both.kv.readonlyToken });
    expect(roQueue.body).toEqual({ error: expect.stringMatching(/NOPERM/) });
    expect((await kv(["FLUSHALL"])).body).toEqual({ result: "OK" });
    expect((await kv(["DBSIZE"])).body).toEqual({ result: 0 });
    expect(await queueKeys()).toEqual(before);
    const published = await fetch(`${both.queue.url}/v2/publish/https://example.com/x`, {
      method: "POST",
      headers: { authorization: `Bearer ${both.queue.token}`, "upstash-delay": "1h" },
      body: "still here",
    });
    expect(published.status).toBe(201);
  });

  it("refuses key patterns that could name the queue's keys, and MONITOR", async () => {
    const user = (pattern: string) =>
      kv(["ACL", "SETUSER", "shared:u", "on", ">pw", pattern, "+@all"]);
    for (const pattern of ["~*", "~stash*", "%R~stashd:{*", "allkeys"]) {
      expect((await user(pattern)).body).toEqual({
        error: expect.stringMatching(/could name the queue's keys/),
      });
    }
    expect((await user("~app:*")).body).toEqual({ result: "OK" });
    const monitor = await both.kvFetch("/monitor", { method: "GET" });
    expect(monitor.status).toBe(400);
    await monitor.body?.cancel();
    for (const argv of [["SLOWLOG", "GET"], ["BGREWRITEAOF"]]) {
      expect((await kv(argv)).body).toEqual({ error: expect.stringMatching(/NOPERM/) });
    }
  });

  it("refuses to start a KV database on the queue's own database number", async () => {
    await expect(
      startStashd({ kvRedisUrl: `${shared.url}/1`, queueRedisUrl: `${shared.url}/1` }),
    ).rejects.toThrow(/same database number/);
  });
});

/** Redis's CRC-64 (Jones polynomial, reflected), as DUMP payloads end with. */
function crc64(data: Buffer): bigint {
  const poly = 0x95ac9329ac4bc9b5n;
  let crc = 0n;
  for (const byte of data) {
    crc ^= BigInt(byte);
    for (let i = 0; i < 8; i++) crc = crc & 1n ? (crc >> 1n) ^ poly : crc >> 1n;
  }
  return crc;
}

/**
 * A DUMP of a small hash (a listpack: type byte, a 1-byte string length, then the listpack's
 * 4-byte size and 2-byte element count) with a wrong element count and a valid checksum: Redis
 * loads it unless it checks payloads deeply (`sanitize-dump-payload yes`).
 */
function corruptListpackCount(payload: Buffer): Buffer {
  const out = Buffer.from(payload);
  out.writeUInt16LE(out.readUInt16LE(6) + 1, 6);
  out.writeBigUInt64LE(crc64(out.subarray(0, -8)), out.length - 8);
  return out;
}
