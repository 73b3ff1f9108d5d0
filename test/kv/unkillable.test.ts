import { describe, expect, it } from "vitest";
import { RedisConnection, parseRedisUrl } from "../../src/shared/redis/connection.js";
import { useGateway } from "./helpers.js";

/**
 * The residual risk of issue 11 (docs/reliability.md, "Issue 11 — KV"): a standard token's script
 * that wrote and then loops cannot be killed (Redis answers UNKILLABLE). stashd answers its request
 * at the command deadline instead of hanging, and other requests get BUSY at once; the database
 * stays busy until an operator acts (here: SHUTDOWN NOSAVE, which only an operator may send).
 */
const LIMIT_MS = 100;
const COMMAND_TIMEOUT_MS = 600;
const { stashd, redis } = useGateway(
  { kvScriptTimeLimitMs: LIMIT_MS, kvCommandTimeoutMs: COMMAND_TIMEOUT_MS, logLevel: "silent" },
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
    const script = "redis.call('SET', KEYS[1], '1') while true do end";
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
