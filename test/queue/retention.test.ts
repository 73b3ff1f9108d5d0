import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { queueEnv, type QueueTestEnv } from "./setup.js";

let env: QueueTestEnv;

beforeAll(async () => {
  env = await queueEnv({ queueLogRetentionMs: 400, queueDlqRetentionMs: 400 });
});
afterAll(async () => {
  await env?.close();
});

describe("retention", () => {
  it("drops log events and DLQ entries older than the configured retention", async () => {
    const rx = await env.receiver();
    rx.status = 500;
    const url = `${rx.url}/old`;
    await env.client.publish({ url, body: "x", retries: 0 });
    await eventually(async () => {
      const list = await env.client.dlq.listMessages({ filter: { url } });
      expect(list.messages).toHaveLength(1);
    });
    expect((await env.client.logs({ filter: { url } })).logs.length).toBeGreaterThan(0);
    await eventually(
      async () => {
        expect((await env.client.dlq.listMessages({ filter: { url } })).messages).toHaveLength(0);
        expect((await env.client.logs({ filter: { url } })).logs).toHaveLength(0);
      },
      { timeoutMs: 5000 },
    );
  });
});
