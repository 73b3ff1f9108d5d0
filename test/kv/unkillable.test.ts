import { describe, expect, it } from "vitest";
import { credentialsOf } from "../../src/kv/databases/database-manager.js";
import { createDatabase } from "../../src/kv/databases/registry.js";
import { textOf } from "../../src/shared/redis/cluster/commands.js";
import {
  RedisConnection,
  parseRedisUrl,
  type RedisEndpoint,
} from "../../src/shared/redis/connection.js";
import { eventually } from "../harness/eventually.js";
import { freePort, startRedis } from "../harness/redis.js";
import { useGateway } from "./helpers.js";

/**
 * Issue 11 on an external Redis (docs/reliability.md, "Issue 11 — KV"): a standard token's script
 * that wrote and then loops cannot be killed (Redis answers UNKILLABLE). By default stashd never
 * stops someone else's Redis: it answers the request at the command deadline instead of hanging,
 * other requests get BUSY at once, and the database stays busy until an operator acts (here:
 * SHUTDOWN NOSAVE). A database created with `--stop-unkillable-scripts` gets the managed
 * databases' treatment: SHUTDOWN NOSAVE after the grace (unkillable-restart.test.ts).
 */
const LIMIT_MS = 100;
const GRACE_MS = 200;
const COMMAND_TIMEOUT_MS = 600;
const SCRIPT = "redis.call('SET', KEYS[1], '1') while true do end";
const { stashd, redis } = useGateway(
  {
    kvScriptTimeLimitMs: LIMIT_MS,
    kvUnkillableScriptGraceMs: GRACE_MS,
    kvCommandTimeoutMs: COMMAND_TIMEOUT_MS,
    logLevel: "silent",
  },
  ["--lua-time-limit", String(LIMIT_MS)],
);

async function post(body: unknown, token: string): Promise<{ status: number; body: unknown }> {
  const res = await stashd().kvFetch("/", {
    body: JSON.stringify(body),
    token,
    signal: AbortSignal.timeout(COMMAND_TIMEOUT_MS * 4),
  });
  return { status: res.status, body: (await res.json()) as unknown };
}

describe("a script that wrote, then loops", () => {
  it("is answered at the command deadline; other requests get BUSY, never hang", async () => {
    const script = SCRIPT;
    // Both pools logged in before the server gets busy (the read-only user is created lazily).
    expect((await post(["PING"], stashd().kv.readonlyToken)).body).toEqual({ result: "PONG" });
    try {
      await loopAndCheck(script);
    } finally {
      const operator = await RedisConnection.open(parseRedisUrl(redis().url), 2000);
      await operator.send(["SHUTDOWN", "NOSAVE"]).catch(() => undefined);
      operator.destroy();
    }
  });
});

describe("on an external Redis whose database allows stopping it", () => {
  it("stops that Redis with SHUTDOWN NOSAVE after the grace and answers 503 saying so", async () => {
    await withStoppableDatabase("stoppable", async ({ token, url }) => {
      const started = Date.now();
      const res = await post(["EVAL", SCRIPT, "1", "uk:k"], token);
      // Answered by the shutdown, or (on a loaded machine) by the command deadline just before.
      expect(res.status).toBe(503);
      expect(res.body).toEqual({
        error: expect.stringMatching(/^ERR database (restarting|busy): .*SHUTDOWN NOSAVE/),
      });
      expect(Date.now() - started).toBeGreaterThanOrEqual(LIMIT_MS);
      // The Redis process is gone: nothing restarts an external one but its own supervisor.
      await eventually(() => expect(RedisConnection.open(url, 500)).rejects.toThrow());
      expect(await post(["GET", "uk:k"], token)).toEqual({
        status: 503,
        body: {
          error: expect.stringMatching(
            /^ERR database restarting: .*none of the script's writes were kept and it answers again once its supervisor restarts it/,
          ),
        },
      });
    });
  });

  it("tries again when its first kill reached Redis before the script started", async () => {
    await withStoppableDatabase("paused", async ({ token, url }) => {
      // CLIENT PAUSE WRITE holds the EVAL but not SCRIPT KILL: the first kill, at the time
      // limit, finds no script (NOTBUSY). The request's wait goes on, and so do the kills.
      const operator = await RedisConnection.open(url, 2000);
      await operator.send(["CLIENT", "PAUSE", String(LIMIT_MS * 2.5), "WRITE"]);
      operator.destroy();
      const res = await post(["EVAL", SCRIPT, "1", "uk:k"], token);
      expect(res.status).toBe(503);
      await eventually(() => expect(RedisConnection.open(url, 500)).rejects.toThrow());
    });
  });

  it("tries again on the next BUSY answer when Redis stalled past the kill's reply deadline", async () => {
    await withStoppableDatabase("stalled", async ({ token, url, pid }) => {
      const looping = post(["EVAL", SCRIPT, "1", "uk:k"], token);
      await new Promise((r) => setTimeout(r, LIMIT_MS / 4));
      // Stopped past the command deadline: the first kill and the EVAL both get no reply.
      process.kill(pid, "SIGSTOP");
      await new Promise((r) => setTimeout(r, COMMAND_TIMEOUT_MS + LIMIT_MS * 2));
      process.kill(pid, "SIGCONT");
      expect(await looping).toEqual({
        status: 503,
        body: { error: expect.stringMatching(/no reply within/) },
      });
      // Nothing waits on the script any more; the traffic it answers BUSY starts the next kill.
      await eventually(
        async () => {
          const other = await post(["GET", "uk:other"], token);
          expect(other.status).toBe(503);
          await expect(RedisConnection.open(url, 500)).rejects.toThrow();
        },
        { intervalMs: LIMIT_MS / 2 },
      );
    });
  });
});

/**
 * Runs `body` with a database on its own external Redis that allows SHUTDOWN NOSAVE, and makes
 * sure that Redis is gone afterwards (SHUTDOWN NOSAVE works even inside an unkillable script,
 * where SIGTERM is never handled).
 */
async function withStoppableDatabase(
  name: string,
  body: (db: { token: string; url: RedisEndpoint; pid: number }) => Promise<void>,
): Promise<void> {
  const own = await startRedis(["--lua-time-limit", String(LIMIT_MS)], await freePort());
  const url = parseRedisUrl(own.url);
  try {
    const operator = await RedisConnection.open(url, 2000);
    const info = await operator.send(["INFO", "server"]);
    operator.destroy();
    const pid = Number(/process_id:(\d+)/.exec(textOf(info) ?? "")?.[1]);
    const record = createDatabase(stashd().dataDir, name, {
      redisUrl: own.url,
      stopUnkillableScripts: true,
    });
    const token = credentialsOf(record).token;
    await eventually(async () => expect((await post(["PING"], token)).status).toBe(200));
    await body({ token, url, pid });
  } finally {
    const operator = await RedisConnection.open(url, 500).catch(() => undefined);
    await operator?.send(["SHUTDOWN", "NOSAVE"]).catch(() => undefined);
    operator?.destroy();
    await own.stop();
  }
}

async function loopAndCheck(script: string): Promise<void> {
  const started = Date.now();
  const looping = post(["EVAL", script, "1", "uk:k"], stashd().kv.token);
  await new Promise((r) => setTimeout(r, LIMIT_MS * 3));
  const other = await post(["GET", "uk:other"], stashd().kv.readonlyToken);
  expect(other).toEqual({ status: 400, body: { error: expect.stringMatching(/^BUSY/) } });
  const res = await looping;
  expect(res.status).toBe(503);
  expect(res.body).toEqual({ error: expect.stringMatching(/no reply within/) });
  expect(Date.now() - started).toBeLessThan(COMMAND_TIMEOUT_MS * 3);
}
