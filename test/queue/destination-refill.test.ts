import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { queueEnv, type QueueTestEnv } from "./setup.js";

/**
 * A backlog to one destination is refilled a batch at a time as its attempts end (docs/queue.md,
 * Fairness), never by the idle poll: attempts that end while a claim runs must not leave the
 * destination below its refill level with nobody claiming. The idle poll is a minute here, so a
 * missed refill would stall the drain far past the deadline.
 */
let env: QueueTestEnv;

beforeAll(async () => {
  env = await queueEnv({ queueIdlePollMs: 60_000 });
});
afterAll(async () => {
  await env?.close();
});

describe("a backlog to one destination at its share", () => {
  it("is drained by batch claims without waiting for the idle poll", async () => {
    const rx = await env.receiver();
    const count = 400;
    // Due together, a moment from now: the dispatcher claims them (no hand-off at publish).
    const notBefore = String(Math.ceil(Date.now() / 1000) + 2);
    const items = Array.from({ length: count }, (_, i) => ({
      destination: `${rx.url}/b${i}`,
      body: String(i),
      headers: { "Upstash-Not-Before": notBefore },
    }));
    const res = await env.api("/v2/batch", { method: "POST", body: JSON.stringify(items) });
    expect(res.status).toBe(201);
    await eventually(() => expect(rx.requests).toHaveLength(count), { timeoutMs: 30_000 });
  });
});
