import { describe, expect, it } from "vitest";
import { transitions } from "../../src/queue/store/transitions.js";
import { AppError } from "../../src/shared/errors.js";
import type { Reply } from "../../src/shared/redis/resp.js";
import { useRedisPool } from "../harness/redis-pool.js";

/**
 * Each queue transition's reply is read by one typed decoder (src/queue/store/script-replies.ts)
 * that refuses a reply off its script's contract with a 500 `internal` error naming the script,
 * rather than reading it as 0 or an empty list. The replies here are real Redis replies of
 * scripts returning the wrong shape; the right shapes are decoded on every queue test's path
 * (and every transition runs in lua-contracts.test.ts).
 */
const { pool } = useRedisPool();

/** The reply Redis gives for a script returning `lua`. */
const replyOf = (lua: string): Promise<Reply> => pool().exec(["EVAL", `return ${lua}`, "0"]);

function refusal(decode: () => unknown): AppError {
  try {
    decode();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error("the decoder took the reply");
}

describe("queue script replies", () => {
  it.each([
    ["finish", "7", "one of codes 1, 2, -1", "integer 7"],
    ["finish", "'1'", "an integer", 'bulk "1"'],
    ["reap", "-1", "a count", "integer -1"],
    ["cancel", "{}", "an integer", "[]"],
    ["renew", "{1}", "a string", "[integer 1]"],
    ["claim", "{0, {}, 0, 'id', 'meta'}", "groups of id, meta, body and retried", "[integer 0"],
    ["enqueue", "{1}", "pairs of code and response", "[integer 1]"],
    ["queueConfig", "-4", "one of codes -2, -3", "integer -4"],
    ["workflowEnd", "{9}", "one of codes 1, 0", "[integer 9]"],
    ["rotateSigningKeys", "{'a', 'b', 'c'}", "two keys", '[bulk "a"'],
  ] as const)(
    "%s answering %s is an internal error naming the script",
    async (name, lua, want, got) => {
      const t = transitions[name];
      const reply = await replyOf(lua);
      const e = refusal(() => t.decoded(reply));
      expect(e.code).toBe("internal");
      expect(e.status).toBe(500);
      expect(e.message).toContain(`queue script ${t.script.name} answered off its contract`);
      expect(e.message).toContain(`expected ${want}`);
      expect(e.message).toContain(`got ${got}`);
    },
  );

  it("reads a Redis error reply as the store failing (503), not as a contract breach", async () => {
    const reply = await pool().exec(["EVAL", "return redis.error_reply('ERR boom')", "0"]);
    const e = refusal(() => transitions.reap.decoded(reply));
    expect(e.code).toBe("backend_unavailable");
    expect(e.message).toContain("queue store error in reap: ERR boom");
  });

  it("decodes replies of the contract's shapes", async () => {
    expect(transitions.finish.decoded(await replyOf("2"))).toBe(2);
    expect(transitions.queueConfig.decoded(await replyOf("-3"))).toBe(-3);
    expect(transitions.queueConfig.decoded(await replyOf("4"))).toBe(4);
    expect(transitions.renew.decoded(await replyOf("{'a', 'b'}"))).toEqual(["a", "b"]);
    expect(transitions.workflowStart.decoded(await replyOf("{3, false}"))).toEqual({
      created: false,
      firstId: "",
    });
    expect(
      transitions.claim.decoded(await replyOf("{1, {'o'}, 2, 3, 'id', 'm', 'b', false}")),
    ).toEqual({
      skipped: 1,
      atShare: ["o"],
      deepest: 2,
      parked: 3,
      messages: [{ id: "id", meta: "m", body: Buffer.from("b"), retried: 0 }],
    });
  });
});
