import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EncodedCommands, encodeCommands, type Reply } from "../../src/shared/redis/resp.js";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import { startRedis, testPool, type TestRedis } from "../harness/redis.js";

/**
 * Commands already encoded (a `/pipeline` body read straight into RESP) leave in the same write
 * as other requests' commands of the same event-loop turn (RedisConnection's flush, encodeMixed):
 * each call must still get its own replies, in order.
 */
let redis: TestRedis;
let pool: RedisPool;

beforeAll(async () => {
  redis = await startRedis();
  pool = testPool(redis.url, 1);
  await pool.exec(["PING"]);
});

afterAll(async () => {
  await pool.close();
  await redis.stop();
});

/** Commands of string arguments as EncodedCommands (as a /pipeline body's are sent). */
function encoded(commands: string[][]): EncodedCommands {
  return new EncodedCommands(encodeCommands(commands), commands.length);
}

const text = (r: Reply): string =>
  r.kind === "bulk" || r.kind === "simple" ? r.value.toString() : JSON.stringify(r);

describe("encoded commands among plain ones on one connection", () => {
  it("answers every call with its own replies when they share a write", async () => {
    // All issued in one turn on a pool of one connection: one flush carries them all.
    const calls = [
      pool.exchange([["SET", "enc:a", "1"]], {}),
      pool.exchangeEncoded(
        encoded([
          ["GET", "enc:a"],
          ["ECHO", "first"],
        ]),
        { raw: true },
      ),
      pool.exchange(
        [
          ["INCR", "enc:a"],
          ["ECHO", "middle"],
        ],
        {},
      ),
      pool.exchangeEncoded(encoded([["GET", "enc:a"]]), {}),
      pool.exchange([["ECHO", "last"]], {}),
    ];
    const results = await Promise.all(calls);
    expect(results.map((r) => r.replies.map(text))).toEqual([
      ["OK"],
      ["1", "first"],
      [JSON.stringify({ kind: "int", value: "2" }), "middle"],
      ["2"],
      ["last"],
    ]);
    // Asked for raw replies, the encoded call got them so (what /pipeline renders from).
    expect(results[1]?.raw).toBeDefined();
  });
});
