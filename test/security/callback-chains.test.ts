import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { queueEnv, type QueueTestEnv } from "../queue/setup.js";

/**
 * Reliability scenario 5 (docs/reliability.md): callback chains are bounded. A callback message
 * carries no callback of its own (and `depth` caps any chain at STASHD_QUEUE_MAX_CALLBACK_DEPTH),
 * so a callback URL that keeps failing produces exactly one callback message, retried and then
 * dead-lettered, and nothing after it.
 */
let env: QueueTestEnv;

beforeAll(async () => {
  env = await queueEnv();
});
afterAll(async () => {
  await env?.close();
});

describe("callback chains", () => {
  it("stop after one hop when the callback and failure callback URLs fail", async () => {
    const dest = await env.receiver();
    const cb = await env.receiver();
    dest.status = 500;
    cb.status = 500;
    const res = await env.api(`/v2/publish/${dest.url}/chain`, {
      method: "POST",
      body: "c",
      headers: {
        "Upstash-Retries": "0",
        "Upstash-Callback": `${cb.url}/cb`,
        "Upstash-Callback-Retries": "1",
        "Upstash-Failure-Callback": `${cb.url}/failure`,
        "Upstash-Failure-Callback-Retries": "1",
      },
    });
    expect(res.status).toBe(201);
    // Source FAILED, then both callback messages retried once and dead-lettered: 3 DLQ entries.
    await eventually(
      async () => {
        const dlq = await env.client.dlq.listMessages();
        expect(dlq.messages).toHaveLength(3);
      },
      { timeoutMs: 10_000 },
    );
    const created = await env.client.logs({ filter: { state: "CREATED" } });
    expect(created.logs).toHaveLength(3);
    expect(cb.requests.map((r) => new URL(r.url).pathname).sort()).toEqual([
      "/cb",
      "/cb",
      "/failure",
      "/failure",
    ]);
  });
});
