import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { queueEnv, received, type QueueTestEnv } from "./setup.js";

let env: QueueTestEnv;

beforeAll(async () => {
  env = await queueEnv({ queueMaxMessageBytes: 1024, queueMaxTimeoutMs: 300, queueMaxRetries: 5 });
});
afterAll(async () => {
  await env?.close();
});

async function dlqFor(url: string) {
  return eventually(async () => {
    const list = await env.client.dlq.listMessages({ filter: { url } });
    expect(list.messages).toHaveLength(1);
    return list.messages[0];
  });
}

describe("limits", () => {
  it("refuses an oversize body with 413 and too many retries with 400", async () => {
    const big = await env.api("/v2/publish/http://127.0.0.1:1/x", {
      method: "POST",
      body: "x".repeat(2048),
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toHaveProperty("error");
    const retries = await env.api("/v2/publish/http://127.0.0.1:1/x", {
      method: "POST",
      headers: { "Upstash-Retries": "6" },
    });
    expect(retries.status).toBe(400);
  });

  it("fails an attempt that exceeds the timeout, with status 0 and an error", async () => {
    const rx = await env.receiver();
    rx.delayMs = 1000;
    await env.client.publish({ url: `${rx.url}/slow`, body: "t", retries: 0 });
    const entry = await dlqFor(`${rx.url}/slow`);
    expect(entry?.responseStatus).toBe(0);
    const logs = await env.client.logs({ filter: { url: `${rx.url}/slow`, state: "ERROR" } });
    expect(logs.logs[0]?.error).toMatch(/timed out/);
  });

  it("truncates kept response bodies to the max message size", async () => {
    const rx = await env.receiver();
    rx.status = 500;
    rx.responseBody = "y".repeat(5000);
    await env.client.publish({ url: `${rx.url}/big`, body: "b", retries: 0 });
    const entry = await dlqFor(`${rx.url}/big`);
    expect(entry?.responseBody).toHaveLength(1024);
  });

  it("honours Retry-After from the destination", async () => {
    const rx = await env.receiver();
    rx.status = 429;
    rx.responseHeaders = { "Retry-After": "1" };
    await env.client.publish({ url: `${rx.url}/ra`, body: "r", retries: 1 });
    await received(rx, 0);
    const first = Date.now();
    rx.status = 200;
    await received(rx, 1, 3000);
    expect(Date.now() - first).toBeGreaterThanOrEqual(900);
  });

  it("configures callbacks with Upstash-Callback-* headers", async () => {
    const rx = await env.receiver();
    const cb = await env.receiver();
    cb.status = 500;
    const res = await env.api(`/v2/publish/${rx.url}/c`, {
      method: "POST",
      body: "c",
      headers: {
        "Upstash-Callback": `${cb.url}/cb`,
        "Upstash-Callback-Retries": "1",
        "Upstash-Callback-Retry-Delay": "10",
        "Upstash-Callback-Method": "PUT",
        "Upstash-Callback-Forward-X-Cb": "cbv",
      },
    });
    expect(res.status).toBe(201);
    await eventually(() => expect(cb.requests).toHaveLength(2));
    expect(cb.requests[1]?.method).toBe("PUT");
    expect(cb.requests[1]?.headers["x-cb"]).toBe("cbv");
    expect(cb.requests[1]?.headers["upstash-retried"]).toBe("1");
    expect(cb.requests.every((r) => r.signatureError === undefined)).toBe(true);
  });
});
