import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { queueEnv, received, type QueueTestEnv } from "./setup.js";

let env: QueueTestEnv;

beforeAll(async () => {
  env = await queueEnv();
});
afterAll(async () => {
  await env?.close();
});

describe("publish and delivery", () => {
  it("delivers a signed message with the spec's headers", async () => {
    const rx = await env.receiver();
    const res = await env.client.publishJSON({
      url: `${rx.url}/hook?a=1`,
      body: { hello: "world" },
      headers: { "X-Custom": "yes" },
    });
    expect(res.messageId).toMatch(/^msg_[A-Za-z0-9]+$/);
    const got = await received(rx, 0);
    expect(got.signatureError).toBeUndefined();
    expect(got.url).toBe(`${rx.url}/hook?a=1`);
    expect(got.method).toBe("POST");
    expect(JSON.parse(got.body)).toEqual({ hello: "world" });
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.headers["x-custom"]).toBe("yes");
    expect(got.headers["upstash-message-id"]).toBe(res.messageId);
    expect(got.headers["upstash-retried"]).toBe("0");
    expect(got.headers["user-agent"]).toBe("Upstash-QStash");
  });

  it("returns 201 with messageId and url", async () => {
    const rx = await env.receiver();
    const res = await env.api(`/v2/publish/${rx.url}/x`, { method: "POST", body: "hi" });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { messageId: string; url: string };
    expect(body.url).toBe(`${rx.url}/x`);
    await eventually(() => expect(rx.requests).toHaveLength(1));
  });

  it("uses Upstash-Method and keeps raw paths with double slashes", async () => {
    const rx = await env.receiver();
    await env.client.publish({ url: `${rx.url}//a//b/?q=1`, method: "PUT", body: "x" });
    const got = await received(rx, 0);
    expect(got.method).toBe("PUT");
    expect(got.url).toBe(`${rx.url}//a//b/?q=1`);
    expect(got.signatureError).toBeUndefined();
  });

  it("retries until success, counting Upstash-Retried", async () => {
    const rx = await env.receiver();
    rx.status = 500;
    await env.client.publish({ url: `${rx.url}/r`, body: "r", retries: 3, retryDelay: "10" });
    await eventually(() => expect(rx.requests.length).toBeGreaterThanOrEqual(2));
    rx.status = 200;
    await eventually(async () => {
      expect(rx.requests.every((r) => r.signatureError === undefined)).toBe(true);
      const logs = await env.client.logs({ filter: { url: `${rx.url}/r`, state: "DELIVERED" } });
      expect(logs.logs).toHaveLength(1);
    });
    expect(rx.requests.map((r) => r.headers["upstash-retried"])).toEqual(
      rx.requests.map((_, i) => String(i)),
    );
  });

  it("delays delivery with Upstash-Delay and Not-Before", async () => {
    const rx = await env.receiver();
    const start = Date.now();
    await env.client.publish({ url: rx.url, body: "d", delay: 1 });
    await env.client.publish({ url: rx.url, body: "n", notBefore: Math.ceil(start / 1000) + 2 });
    await eventually(() => expect(rx.requests).toHaveLength(1), { timeoutMs: 3000 });
    expect(Date.now() - start).toBeGreaterThanOrEqual(990);
    expect((await received(rx, 0)).body).toBe("d");
    await eventually(() => expect(rx.requests).toHaveLength(2), { timeoutMs: 4000 });
    expect(Date.now()).toBeGreaterThanOrEqual((Math.ceil(start / 1000) + 2) * 1000);
  });

  it("forwards headers and, with Header-Forward, all request headers", async () => {
    const rx = await env.receiver();
    const res = await env.api(`/v2/publish/${rx.url}`, {
      method: "POST",
      body: "f",
      headers: {
        "Upstash-Forward-Bypass-Tunnel-Reminder": "1",
        "Upstash-Header-Forward": "true",
        "X-Plain": "plain",
        "Content-Type": "text/plain",
      },
    });
    expect(res.status).toBe(201);
    const got = await received(rx, 0);
    expect(got.headers["bypass-tunnel-reminder"]).toBe("1");
    expect(got.headers["x-plain"]).toBe("plain");
    expect(got.headers["content-type"]).toBe("text/plain");
    expect(got.headers["authorization"]).toBeUndefined();
  });

  it("sends QStash's own headers in place of forwarded ones of the same name", async () => {
    const rx = await env.receiver();
    const headers = new Headers({
      "Upstash-Forward-User-Agent": "mine",
      "Upstash-Forward-Upstash-Retried": "7",
    });
    headers.append("Upstash-Forward-X-Multi", "a");
    headers.append("Upstash-Forward-X-Multi", "b");
    const res = await env.api(`/v2/publish/${rx.url}/u`, { method: "POST", body: "u", headers });
    expect(res.status).toBe(201);
    const got = await received(rx, 0);
    // Node keeps the first of repeated User-Agent lines and joins other repeats with ", ".
    expect(got.headers["user-agent"]).toBe("Upstash-QStash");
    expect(got.headers["upstash-retried"]).toBe("0");
    expect(got.headers["x-multi"]).toBe("a, b");
    expect(got.signatureError).toBeUndefined();
  });

  it("accepts configuration as query parameters (webhook intake)", async () => {
    const rx = await env.receiver();
    const query = `keep=1&qstash_token=${encodeURIComponent(env.stashd.queue.token)}&upstash-method=PATCH&upstash-forward-x-hook=yes`;
    const res = await fetch(`${env.stashd.queue.url}/v2/publish/${rx.url}/wh?${query}`, {
      method: "POST",
      body: "w",
    });
    expect(res.status).toBe(201);
    const got = await received(rx, 0);
    expect(got.method).toBe("PATCH");
    expect(got.url).toBe(`${rx.url}/wh?keep=1`);
    expect(got.headers["x-hook"]).toBe("yes");
    expect(got.signatureError).toBeUndefined();
  });

  it("deduplicates by id and by content with 202 and the original id", async () => {
    const rx = await env.receiver();
    const first = await env.client.publish({ url: rx.url, body: "a", deduplicationId: "d1" });
    const again = await env.api(`/v2/publish/${rx.url}`, {
      method: "POST",
      body: "b",
      headers: { "Upstash-Deduplication-Id": "d1" },
    });
    expect(again.status).toBe(202);
    expect(await again.json()).toMatchObject({ messageId: first.messageId, deduplicated: true });
    const c1 = await env.client.publish({
      url: rx.url,
      body: "c",
      contentBasedDeduplication: true,
    });
    const c2 = await env.client.publish({
      url: rx.url,
      body: "c",
      contentBasedDeduplication: true,
    });
    expect(c2.messageId).toBe(c1.messageId);
    expect((c2 as { deduplicated?: boolean }).deduplicated).toBe(true);
    await eventually(() => expect(rx.requests).toHaveLength(2));
  });
});

describe("errors", () => {
  it("refuses a missing or wrong token with 401 JSON", async () => {
    const res = await fetch(`${env.stashd.queue.url}/v2/keys`);
    expect(res.status).toBe(401);
    expect(await res.json()).toHaveProperty("error");
    const bad = await fetch(`${env.stashd.queue.url}/v2/keys`, {
      headers: { authorization: "Bearer nope" },
    });
    expect(bad.status).toBe(401);
  });

  it("refuses a destination without scheme and unknown groups", async () => {
    const res = await env.api("/v2/publish/example.com/x", { method: "POST", body: "x" });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe(
      "invalid destination url: endpoint has invalid scheme, add http:// or https://",
    );
    const group = await env.api("/v2/publish/no-such-group", { method: "POST", body: "x" });
    expect(group.status).toBe(404);
  });

  it("refuses bad header values", async () => {
    for (const [name, value] of [
      ["Upstash-Delay", "10x"],
      ["Upstash-Retries", "-1"],
      ["Upstash-Retry-Delay", "pow(2,"],
      ["Upstash-Method", "BREW"],
      ["Upstash-Callback", "ftp://x"],
      ["Upstash-Not-Before", "soon"],
    ] as const) {
      const res = await env.api("/v2/publish/http://127.0.0.1:1/x", {
        method: "POST",
        headers: { [name]: value },
      });
      expect(res.status, name).toBe(400);
      expect(await res.json()).toHaveProperty("error");
    }
  });
});
