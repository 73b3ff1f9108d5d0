import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queueEnv, type QueueTestEnv } from "../queue/setup.js";
import type { TestReceiver } from "../queue/receiver.js";

/**
 * A holder of the queue token with one `Upstash-Flow-Control-Key` per message (a key per user id,
 * a loop bug): keys are kept once used, and every `GET /v2/flowControl` and `/metrics` scrape reads
 * them all (100 000 keys: a 7.5 s list holding the event loop, a publish beside it waiting 0.8 s,
 * a delivery's lease lost). STASHD_QUEUE_MAX_FLOW_CONTROL_KEYS bounds them: a publish naming one
 * more is refused with a JSON 412 before anything of it is stored; keys already made keep working.
 */

const MAX = 5;
let env: QueueTestEnv;
let rx: TestReceiver;
beforeAll(async () => {
  env = await queueEnv({ queueMaxFlowControlKeys: MAX });
  rx = await env.receiver();
});
afterAll(() => env.close());

const publishWithKey = (key: string, path = "/v2/publish/") =>
  env.api(`${path}${rx.url}/fc`, {
    method: "POST",
    body: "x",
    headers: { "upstash-flow-control-key": key, "upstash-flow-control-value": "parallelism=1" },
  });

describe("flow-control keys are bounded", () => {
  it("refuses a new key past the max with a JSON 412, keeps serving the existing ones", async () => {
    for (let i = 0; i < MAX; i++) expect((await publishWithKey(`k${i}`)).status).toBe(201);
    const refused = await publishWithKey("one-more");
    expect(refused.status).toBe(412);
    expect(((await refused.json()) as { error: string }).error).toMatch(/flow-control keys/);
    expect((await publishWithKey("k0")).status).toBe(201);
    // Without a key, and a URL group, publishes are not affected.
    expect(
      (await env.api(`/v2/publish/${rx.url}/plain`, { method: "POST", body: "y" })).status,
    ).toBe(201);
    const list = (await (await env.api("/v2/flowControl")).json()) as unknown[];
    expect(list).toHaveLength(MAX);
    expect((await env.api("/v2/flowControl/one-more")).status).toBe(404);
  });

  it("refuses an enqueue to a FIFO queue with a new key (nothing stored)", async () => {
    const res = await publishWithKey("new-in-queue", "/v2/enqueue/q1/");
    expect(res.status).toBe(412);
    expect(((await res.json()) as { error: string }).error).toMatch(/flow-control keys/);
    expect((await publishWithKey("k2", "/v2/enqueue/q1/")).status).toBe(201);
    expect((await env.api("/v2/flowControl/new-in-queue")).status).toBe(404);
  });

  it("refuses a batch item with a new key, stores the others", async () => {
    const res = await env.api("/v2/batch", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify([
        {
          destination: `${rx.url}/b1`,
          headers: {
            "upstash-flow-control-key": "k1",
            "upstash-flow-control-value": "parallelism=1",
          },
          body: "1",
        },
        {
          destination: `${rx.url}/b2`,
          headers: {
            "upstash-flow-control-key": "new-in-batch",
            "upstash-flow-control-value": "parallelism=1",
          },
          body: "2",
        },
      ]),
    });
    expect(res.headers.get("content-type")).toMatch(/json/);
    expect(res.status).toBe(201);
    const [stored, refused] = (await res.json()) as [{ messageId?: string }, { error?: string }];
    expect(stored.messageId).toMatch(/^msg_/);
    expect(refused.error).toMatch(/flow-control keys/);
    expect((await env.api("/v2/flowControl/new-in-batch")).status).toBe(404);
  });
});
