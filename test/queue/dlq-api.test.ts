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

interface DlqList {
  messages: { dlqId: string; responseStatus: number; body?: string }[];
  cursor?: string;
}

async function dlq(query: string): Promise<DlqList> {
  return (await (await env.api(`/v2/dlq?${query}`)).json()) as DlqList;
}

describe("DLQ API forms", () => {
  it("filters by responseStatus and dates, orders both ways, deletes by JSON body", async () => {
    const rx = await env.receiver();
    const fail = await env.receiver();
    rx.status = 502;
    const url = `${rx.url}/o`;
    for (const body of ["first", "second"]) {
      await env.api(`/v2/publish/${url}`, {
        method: "POST",
        body,
        headers: {
          "Upstash-Retries": "0",
          "Upstash-Failure-Callback": `${fail.url}/f`,
          "Upstash-Failure-Callback-Forward-X-Fc": "fcv",
        },
      });
      await received(fail, body === "first" ? 0 : 1);
    }
    expect(fail.requests[0]?.headers["x-fc"]).toBe("fcv");
    const q = `url=${encodeURIComponent(url)}`;
    const earliest = await dlq(`${q}&responseStatus=502`);
    expect(earliest.messages.map((m) => m.body)).toEqual(["first", "second"]);
    const latest = await dlq(`${q}&order=latestFirst`);
    expect(latest.messages.map((m) => m.body)).toEqual(["second", "first"]);
    expect((await dlq(`${q}&responseStatus=500`)).messages).toHaveLength(0);
    expect((await dlq(`${q}&toDate=1`)).messages).toHaveLength(0);
    const res = await env.api("/v2/dlq", {
      method: "DELETE",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ dlqIds: earliest.messages.map((m) => m.dlqId) }),
    });
    expect(await res.json()).toEqual({ deleted: 2 });
    await eventually(async () => expect((await dlq(q)).messages).toHaveLength(0));
  });

  it("treats a trailing slash as the collection route and answers unknown routes with 404", async () => {
    const list = await env.api("/v2/dlq/");
    expect(list.status).toBe(200);
    for (const path of ["/v2/logs?cursor=abc", "/v2/dlq?cursor=1-x", "/v2/events?count=0"]) {
      const bad = await env.api(path);
      expect(bad.status, path).toBe(400);
    }
    const unknown = await env.api("/v2/nothing-here");
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toHaveProperty("error");
  });
});
