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

interface CallbackBody {
  status: number;
  body: string;
  retried?: number;
  maxRetries: number;
  sourceMessageId: string;
  url: string;
  sourceBody: string;
  dlqId?: string;
}

const parse = (body: string) => JSON.parse(body) as CallbackBody;

describe("callbacks", () => {
  it("calls the callback after each attempt with the response, signed", async () => {
    const dest = await env.receiver();
    const cb = await env.receiver();
    dest.status = 503;
    dest.responseBody = "busy";
    const { messageId } = await env.client.publish({
      url: `${dest.url}/d`,
      body: "payload",
      retries: 1,
      retryDelay: "400", // room to switch the status once the first attempt was answered
      callback: `${cb.url}/cb`,
    });
    // The receiver answers as it records a request, so once the first attempt is seen it has
    // had its 503; switching here (not after the callback, which may take longer than the retry
    // delay on a loaded machine) makes the retry the one answered 200.
    await received(dest, 0);
    dest.status = 200;
    dest.responseBody = "done";
    const first = parse((await received(cb, 0)).body);
    const second = await received(cb, 1);
    expect(second.signatureError).toBeUndefined();
    expect(first).toMatchObject({ status: 503, sourceMessageId: messageId, maxRetries: 1 });
    expect(Buffer.from(first.body, "base64").toString()).toBe("busy");
    expect(Buffer.from(first.sourceBody, "base64").toString()).toBe("payload");
    expect(first.retried).toBeUndefined();
    expect(parse(second.body)).toMatchObject({ status: 200, retried: 1, url: `${dest.url}/d` });
  });
});

describe("retries exhausted", () => {
  it("moves the message to the DLQ and calls the failure callback once with dlqId", async () => {
    const dest = await env.receiver();
    const fail = await env.receiver();
    dest.status = 500;
    dest.responseBody = "boom";
    const { messageId } = await env.client.publish({
      url: `${dest.url}/f`,
      body: "x",
      retries: 2,
      failureCallback: `${fail.url}/failed`,
    });
    const call = await received(fail, 0);
    expect(call.signatureError).toBeUndefined();
    expect(dest.requests).toHaveLength(3);
    const payload = parse(call.body);
    expect(payload.dlqId).toMatch(/^\d+-\d+$/);
    const list = await env.client.dlq.listMessages({ filter: { url: `${dest.url}/f` } });
    expect(list.messages).toHaveLength(1);
    const entry = list.messages[0];
    expect(entry).toMatchObject({ messageId, dlqId: payload.dlqId, responseStatus: 500 });
    expect(entry?.responseBody).toBe("boom");
    expect(list.cursor).toBeUndefined();
    const get = await env.api(`/v2/dlq/${payload.dlqId}`);
    expect(get.status).toBe(200);
    await env.client.dlq.delete(payload.dlqId ?? "");
    await expect(env.client.dlq.delete(payload.dlqId ?? "")).rejects.toThrow();
    expect(fail.requests).toHaveLength(1);
  });

  it("fails at once on 489 with Upstash-NonRetryable-Error", async () => {
    const dest = await env.receiver();
    dest.status = 489;
    dest.responseHeaders = { "Upstash-NonRetryable-Error": "true" };
    await env.client.publish({ url: `${dest.url}/n`, body: "x", retries: 3 });
    await eventually(async () => {
      const list = await env.client.dlq.listMessages({ filter: { url: `${dest.url}/n` } });
      expect(list.messages).toHaveLength(1);
    });
    expect(dest.requests).toHaveLength(1);
  });

  it("retries a DLQ entry as a new message with header overrides", async () => {
    const dest = await env.receiver();
    dest.status = 500;
    await env.client.publish({ url: `${dest.url}/r`, body: "again", retries: 0 });
    const dlqId = await eventually(async () => {
      const list = await env.client.dlq.listMessages({ filter: { url: `${dest.url}/r` } });
      expect(list.messages).toHaveLength(1);
      return list.messages[0]?.dlqId ?? "";
    });
    dest.status = 200;
    const res = await env.api(`/v2/dlq/retry/${dlqId}`, {
      method: "POST",
      headers: { "Upstash-Retries": "0" },
    });
    expect(res.status).toBe(201);
    const { messageId } = (await res.json()) as { messageId: string };
    const got = await received(dest, 1);
    expect(got.headers["upstash-message-id"]).toBe(messageId);
    expect(got.body).toBe("again");
    expect(got.signatureError).toBeUndefined();
    expect((await env.api(`/v2/dlq/${dlqId}`)).status).toBe(404);
  });

  it("bulk-retries and bulk-deletes through the SDK", async () => {
    const dest = await env.receiver();
    dest.status = 500;
    for (const body of ["1", "2", "3"]) {
      await env.client.publish({ url: `${dest.url}/b`, body, retries: 0, label: "bulk-dlq" });
    }
    await eventually(async () => {
      const list = await env.client.dlq.listMessages({ filter: { label: "bulk-dlq" } });
      expect(list.messages).toHaveLength(3);
    });
    const page = await env.client.dlq.listMessages({ filter: { label: "bulk-dlq" }, count: 2 });
    expect(page.messages).toHaveLength(2);
    expect(page.cursor).toBeDefined();
    const ids = page.messages.map((m) => m.dlqId);
    dest.status = 200;
    const retried = await env.client.dlq.retry(ids);
    expect(retried.responses).toHaveLength(2);
    await eventually(() => expect(dest.requests).toHaveLength(5));
    const deleted = await env.client.dlq.delete({ filter: { label: "bulk-dlq" } });
    expect(deleted.deleted).toBe(1);
  });
});

describe("messages", () => {
  it("gets and cancels a waiting message", async () => {
    const dest = await env.receiver();
    const { messageId } = await env.client.publish({
      url: `${dest.url}/m`,
      body: "later",
      delay: 60,
      label: "one",
    });
    const msg = await env.client.messages.get(messageId);
    expect(msg).toMatchObject({ messageId, url: `${dest.url}/m`, method: "POST", body: "later" });
    expect(msg.maxRetries).toBe(3);
    expect(msg.notBefore).toBeGreaterThan(Date.now() + 50_000);
    const res = await env.client.messages.cancel(messageId);
    expect(res).toEqual({ cancelled: 1 });
    await expect(env.client.messages.get(messageId)).rejects.toThrow();
    const logs = await env.client.logs({ messageIds: [messageId] });
    expect(logs.logs.map((l) => l.state)).toEqual(["CANCELED", "CANCEL_REQUESTED", "CREATED"]);
  });

  it("bulk-cancels by filter, by ids and all", async () => {
    const dest = await env.receiver();
    const a = await env.client.publish({ url: `${dest.url}/a`, body: "a", delay: 60, label: "x" });
    await env.client.publish({ url: `${dest.url}/b`, body: "b", delay: 60, label: "y" });
    const c = await env.client.publish({ url: `${dest.url}/c`, body: "c", delay: 60 });
    expect(await env.client.messages.cancel({ filter: { label: "y" } })).toEqual({ cancelled: 1 });
    expect(await env.client.messages.cancel([a.messageId])).toEqual({ cancelled: 1 });
    const json = await env.api("/v2/messages", {
      method: "DELETE",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messageIds: [c.messageId] }),
    });
    expect(await json.json()).toEqual({ cancelled: 1 });
    await env.client.publish({ url: `${dest.url}/d`, body: "d", delay: 60 });
    const all = await env.client.messages.cancel({ all: true });
    expect(all.cancelled).toBeGreaterThanOrEqual(1);
  });
});

describe("timeouts", () => {
  it("fails an attempt that outlasts Upstash-Timeout, and says so in the logs", async () => {
    const slow = await env.receiver();
    slow.delayMs = 1500;
    const { messageId } = await env.client.publish({
      url: `${slow.url}/slow`,
      body: "x",
      retries: 0,
      timeout: 1,
    });
    const failed = await eventually(async () => {
      const res = await env.api(`/v2/logs?messageId=${messageId}&state=FAILED`);
      const { logs } = (await res.json()) as {
        logs: { error?: string; responseStatus?: number }[];
      };
      expect(logs).toHaveLength(1);
      return logs[0];
    });
    expect(failed?.error).toBe("request timed out after 1000 ms");
    expect(slow.requests).toHaveLength(1);
  });
});
