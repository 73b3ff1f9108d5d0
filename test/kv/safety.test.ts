import http from "node:http";
import { afterAll, describe, expect, it } from "vitest";
import { credentialsOf } from "../../src/kv/databases/database-manager.js";
import { createDatabase } from "../../src/kv/databases/registry.js";
import { RedisConnection, parseRedisUrl } from "../../src/shared/redis/connection.js";
import { eventually } from "../harness/eventually.js";
import { startRedis } from "../harness/redis.js";
import { command, useGateway } from "./helpers.js";

/**
 * Issue 11, KV (docs/reliability.md, "Issue 11 — KV"): no request or token can stop a database.
 * Redis's own busy threshold is lowered (`lua-time-limit`) as stashd does for managed databases.
 */
const SCRIPT_LIMIT_MS = 150;
const COMMAND_TIMEOUT_MS = 800;
const { stashd, redis } = useGateway(
  // Read-only scripts on (an opt-in): their time limit is tested here.
  {
    kvScriptTimeLimitMs: SCRIPT_LIMIT_MS,
    kvCommandTimeoutMs: COMMAND_TIMEOUT_MS,
    kvReadonlyScripts: true,
    // Both services: the listener-timeout checks cover the queue's port too.
    services: ["kv", "queue"],
  },
  ["--lua-time-limit", String(SCRIPT_LIMIT_MS)],
);
const LOOP = "while true do end";

// A failed run must not leave the test's redis-server spinning (a busy server ignores SIGTERM).
afterAll(async () => {
  const operator = await backend();
  await operator
    .sendMany([
      ["SCRIPT", "KILL"],
      ["FUNCTION", "KILL"],
    ])
    .catch(() => undefined);
  operator.destroy();
});

/** A request that must be answered within `ms` (never hangs the test). */
async function timed(
  path: string,
  body: unknown,
  token: string,
  ms = 3000,
): Promise<{ status: number; body: unknown; ms: number }> {
  const started = Date.now();
  const res = await stashd().kvFetch(path, {
    body: JSON.stringify(body),
    token,
    signal: AbortSignal.timeout(ms),
  });
  return { status: res.status, body: (await res.json()) as unknown, ms: Date.now() - started };
}

/** Every pooled connection of both pools answers (PINGs spread over the round robin). */
async function allConnectionsAnswer(): Promise<void> {
  const tokens = [stashd().kv.token, stashd().kv.readonlyToken];
  const pings = tokens.flatMap((t) => Array.from({ length: 8 }, () => timed("/", ["PING"], t)));
  for (const r of await Promise.all(pings)) expect(r.body).toEqual({ result: "PONG" });
}

/** An operator's own connection to the backend, outside stashd. */
async function backend(): Promise<RedisConnection> {
  return RedisConnection.open(parseRedisUrl(redis().url), 2000);
}

describe("commands that change a pooled connection's mode", () => {
  it.each([
    ["SCRIPT", "DEBUG", "SYNC"],
    ["SCRIPT", "DEBUG", "YES"],
    ["CLIENT", "PAUSE", "10000"],
    ["CLIENT", "REPLY", "OFF"],
    ["CLIENT", "NO-EVICT", "ON"],
    ["SAVE"],
    ["PFDEBUG", "GETREG", "k"],
    ["SSUBSCRIBE", "c"],
    ["SYNC"],
  ])("refuses %s and every connection still answers", async (...argv: string[]) => {
    const res = await timed("/", argv, stashd().kv.token);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: expect.stringMatching(/^ERR Command is not|^ERR Command "/),
    });
    const piped = await timed("/pipeline", [argv, ["PING"]], stashd().kv.token);
    expect((piped.body as unknown[])[1]).toEqual({ result: "PONG" });
    await allConnectionsAnswer();
  });
});

describe("script time limit", () => {
  it("kills an endless function that FCALL_RO runs again as FCALL (not declared no-writes)", async () => {
    const library = `#!lua name=spinner\nredis.register_function('spin_rw', function() ${LOOP} end)`;
    const loaded = await timed("/", ["FUNCTION", "LOAD", "REPLACE", library], stashd().kv.token);
    expect(loaded.body).toEqual({ result: "spinner" });
    // Before the fix the retry was not watched: it ran to the command deadline (503 "no reply
    // within 800 ms") and on, until another request's BUSY reply got it killed.
    const res = await timed("/", ["FCALL_RO", "spin_rw", "0"], stashd().kv.token);
    expect((res.body as { error?: string }).error).toMatch(/killed by user with SCRIPT KILL/);
    expect(res.ms).toBeLessThan(COMMAND_TIMEOUT_MS);
    await allConnectionsAnswer();
  });

  it("kills a read-only token's endless EVAL_RO and answers it with a clear error", async () => {
    const res = await timed("/", ["EVAL_RO", LOOP, "0"], stashd().kv.readonlyToken);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: `ERR script killed: it ran longer than this database's script time limit of ${SCRIPT_LIMIT_MS} ms`,
    });
    expect(res.ms).toBeLessThan(COMMAND_TIMEOUT_MS * 2);
    await allConnectionsAnswer();
  });

  it("kills the script even when its client went away at once", async () => {
    const gone = stashd().kvFetch("/", {
      body: JSON.stringify(["EVAL_RO", LOOP, "0"]),
      token: stashd().kv.readonlyToken,
      signal: AbortSignal.timeout(20),
    });
    await expect(gone).rejects.toThrow();
    await eventually(allConnectionsAnswer, { timeoutMs: 3000 });
  });

  it("kills an endless read-only function called with FCALL_RO", async () => {
    const lib = `#!lua name=spin\nredis.register_function{function_name='spin', callback=function() ${LOOP} end, flags={'no-writes'}}`;
    expect((await command(stashd(), ["FUNCTION", "LOAD", "REPLACE", lib])).body).toEqual({
      result: "spin",
    });
    const res = await timed("/", ["FCALL_RO", "spin", "0"], stashd().kv.readonlyToken);
    expect(res.body).toEqual({ error: expect.stringMatching(/^ERR script killed/) });
    await allConnectionsAnswer();
  });

  it("kills scripts inside pipelines and transactions; the other commands still run", async () => {
    const piped = await timed(
      "/pipeline",
      [
        ["SET", "sl:a", "1"],
        ["EVAL", LOOP, "0"],
        ["GET", "sl:a"],
      ],
      stashd().kv.token,
    );
    expect(piped.body).toEqual([
      { result: "OK" },
      { error: expect.stringMatching(/^ERR script killed/) },
      { result: "1" },
    ]);
    const tx = await timed(
      "/multi-exec",
      [
        ["EVAL", LOOP, "0"],
        ["INCR", "sl:n"],
      ],
      stashd().kv.token,
    );
    expect(tx.body).toEqual([
      { error: expect.stringMatching(/^ERR script killed/) },
      { result: 1 },
    ]);
  });
});

describe("backend deadline", () => {
  it("answers 503 when Redis stops answering, closes that connection and recovers", async () => {
    const operator = await backend();
    // An operator pausing writes: stashd's SET gets no reply until the pause ends.
    const pause = ["CLIENT", "PAUSE", String(COMMAND_TIMEOUT_MS * 4), "WRITE"];
    expect((await operator.send(pause)).kind).toBe("simple");
    const stuck = await timed("/", ["SET", "dl:k", "v"], stashd().kv.token, COMMAND_TIMEOUT_MS * 3);
    expect(stuck.status).toBe(503);
    expect(stuck.body).toEqual({
      error: expect.stringMatching(/^ERR Redis is unreachable: no reply within/),
    });
    expect(stuck.ms).toBeLessThan(COMMAND_TIMEOUT_MS * 2);
    await operator.send(["CLIENT", "UNPAUSE"]);
    operator.destroy();
    await eventually(allConnectionsAnswer, { timeoutMs: 3000 });
    // The SET went down with its connection (503: outcome unknown); writes work again.
    expect((await command(stashd(), ["SET", "dl:k", "w"])).body).toEqual({ result: "OK" });
  });
});

describe("MIGRATE", () => {
  it("is refused unless the database allows it", async () => {
    const argv = ["MIGRATE", "127.0.0.1", "1", "mg:k", "0", "100"];
    const refused = await command(stashd(), argv);
    expect(refused).toEqual({
      status: 400,
      body: { error: expect.stringMatching(/^ERR Command is not available: 'MIGRATE'/) },
    });
    // Its own Redis: two databases may not share one (docs/reliability.md, threat model).
    const own = await startRedis();
    try {
      const record = createDatabase(stashd().dataDir, "migrating", {
        redisUrl: own.url,
        allowMigrate: true,
      });
      const token = credentialsOf(record).token;
      const allowed = await eventually(async () => {
        const res = await command(stashd(), ["SET", "mg:k", "v"], { token });
        expect(res.status).toBe(200);
        return command(stashd(), argv, { token });
      });
      // It reached Redis, which could not connect to the closed port.
      expect(allowed.body).toEqual({ error: expect.stringMatching(/^IOERR/) });
    } finally {
      await own.stop();
    }
  });
});

describe("errors node:http answers itself", () => {
  /** A GET with `count` headers, read raw. */
  function manyHeaders(port: number, count: number): Promise<{ status: number; body: string }> {
    const headers: Record<string, string> = {};
    for (let i = 0; i < count; i++) headers[`x-h${i}`] = "v";
    return new Promise((resolve, reject) => {
      const req = http.get({ host: "127.0.0.1", port, path: "/ping", headers }, (res) => {
        let body = "";
        res.on("data", (d: Buffer) => (body += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on("error", reject);
    });
  }

  it("answers 3000 headers with 431 and a JSON error on both ports", async () => {
    for (const port of [stashd().kv.port, stashd().queue.port]) {
      const res = await manyHeaders(port, 3000);
      expect(res.status).toBe(431);
      expect(JSON.parse(res.body)).toEqual({ error: expect.stringMatching(/headers too large/) });
    }
    expect((await command(stashd(), ["PING"])).body).toEqual({ result: "PONG" });
  });
});
