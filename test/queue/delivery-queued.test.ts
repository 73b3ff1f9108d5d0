import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { queueEnv, type QueueTestEnv } from "./setup.js";

/**
 * More attempts at once to one destination than the delivery client keeps connections to it
 * (256): the rest wait in the client's queue for a free connection and are then sent, each
 * once; none is failed for the wait (undici's dispatch says "busy", which is not an error).
 */
let env: QueueTestEnv;

beforeAll(async () => {
  env = await queueEnv({ queueConcurrency: 300, queueDestinationShare: 100 });
});
afterAll(async () => {
  await env?.close();
});

describe("attempts beyond the client's connections to one destination", () => {
  it("wait for a connection and are delivered once each, without errors", async () => {
    const rx = await env.receiver();
    rx.delayMs = 300;
    const count = 300;
    const notBefore = String(Math.ceil(Date.now() / 1000) + 1);
    const items = Array.from({ length: count }, (_, i) => ({
      destination: `${rx.url}/q${i}`,
      body: String(i),
      headers: { "Upstash-Not-Before": notBefore, "Upstash-Retries": "0" },
    }));
    const res = await env.api("/v2/batch", { method: "POST", body: JSON.stringify(items) });
    expect(res.status).toBe(201);
    await eventually(() => expect(rx.requests).toHaveLength(count), { timeoutMs: 20_000 });
    const paths = rx.requests.map((r) => new URL(r.url).pathname);
    expect(new Set(paths).size).toBe(count);
    await eventually(
      async () => {
        const logs = await env.api("/v2/logs?state=DELIVERED&count=1000");
        const { logs: delivered } = (await logs.json()) as { logs: unknown[] };
        expect(delivered).toHaveLength(count);
      },
      { timeoutMs: 10_000 },
    );
    const failed = await env.api("/v2/logs?state=FAILED&count=1000");
    expect(((await failed.json()) as { logs: unknown[] }).logs).toHaveLength(0);
  }, 40_000);
});
