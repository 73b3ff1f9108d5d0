import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { queueEnv, type QueueTestEnv } from "../queue/setup.js";

let env: QueueTestEnv;

beforeAll(async () => {
  env = await queueEnv();
});
afterAll(async () => {
  await env?.close();
});

async function failOne(url: string): Promise<void> {
  await env.api(`/v2/publish/${url}`, {
    method: "POST",
    body: "x",
    headers: { "Upstash-Retries": "0" },
  });
}

async function dlqCount(): Promise<number> {
  const res = await env.api("/v2/dlq");
  return ((await res.json()) as { messages: unknown[] }).messages.length;
}

describe("bulk filters refuse unknown and empty keys", () => {
  it("DELETE /v2/dlq?labeel=x is a 400 naming the key and deletes nothing", async () => {
    const rx = await env.receiver();
    rx.status = 500;
    await failOne(`${rx.url}/a`);
    await eventually(async () => expect(await dlqCount()).toBe(1));
    const res = await env.api("/v2/dlq?labeel=x", { method: "DELETE" });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toContain("labeel");
    const empty = await env.api("/v2/dlq?label=", { method: "DELETE" });
    expect(empty.status).toBe(400);
    expect((await env.api("/v2/dlq?dlqIds=", { method: "DELETE" })).status).toBe(400);
    expect(await dlqCount()).toBe(1);
    expect((await env.api("/v2/dlq?labeel=x")).status).toBe(400);
    // The JS SDK's explicit `{all: true}` sends only `count`.
    expect(await env.client.dlq.delete({ all: true })).toMatchObject({ deleted: 1 });
  });

  it("DELETE /v2/messages with an unknown run id cancels nothing; unknown keys are 400", async () => {
    const rx = await env.receiver();
    const res = await env.api(`/v2/publish/${rx.url}/later`, {
      method: "POST",
      body: "x",
      headers: { "Upstash-Delay": "1h" },
    });
    const { messageId } = (await res.json()) as { messageId: string };
    const none = await env.api("/v2/messages?workflowRunId=wfr_nonexistent", { method: "DELETE" });
    expect(await none.json()).toEqual({ cancelled: 0 });
    const typo = await env.api("/v2/messages?urll=x", { method: "DELETE" });
    expect(typo.status).toBe(400);
    expect(((await typo.json()) as { error: string }).error).toContain("urll");
    const body = await env.api("/v2/messages", {
      method: "DELETE",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ labell: "x" }),
    });
    expect(body.status).toBe(400);
    expect((await env.api(`/v2/messages/${messageId}`)).status).toBe(200);
    expect(await env.client.messages.cancel({ all: true })).toMatchObject({ cancelled: 1 });
  });

  it("logs accept the api filter (nothing is published through a provider API)", async () => {
    const res = await env.api("/v2/events?api=llm");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ events: [] });
    expect((await env.api("/v2/events?stat=DELIVERED")).status).toBe(400);
    expect((await env.api("/v2/dlq?api=llm")).status).toBe(200);
  });
});
