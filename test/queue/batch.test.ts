import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { queueEnv, type QueueTestEnv } from "./setup.js";
import type { TestReceiver } from "./receiver.js";

/**
 * POST /v2/batch (spec 2.3): `client.batchJSON` to URLs, URL groups and queues, and the Python
 * (`null`) and Go (`""`) body shapes over raw HTTP; per-item errors while the rest is published.
 */
let env: QueueTestEnv;
let rx: TestReceiver;

beforeAll(async () => {
  env = await queueEnv();
  rx = await env.receiver();
});
afterAll(async () => {
  await env?.close();
});

type Item = { messageId?: string; url?: string; error?: string } | { messageId: string }[];

async function rawBatch(items: unknown[]): Promise<{ status: number; body: Item[] }> {
  const res = await env.api("/v2/batch", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(items),
  });
  return { status: res.status, body: (await res.json()) as Item[] };
}

const bodies = (): string[] => rx.requests.map((r) => r.body);

describe("batch", () => {
  it("publishes to URLs, URL groups and queues in request order (JS SDK)", async () => {
    await env.client.urlGroups.addEndpoints({
      name: "batch-group",
      endpoints: [{ url: `${rx.url}/g1` }, { url: `${rx.url}/g2` }],
    });
    const res = await env.client.batchJSON([
      { url: `${rx.url}/one`, body: { n: 1 }, headers: { "X-Extra": "e" } },
      { urlGroup: "batch-group", body: { n: 2 } },
      { url: `${rx.url}/queued`, body: { n: 3 }, queueName: "batch-q" },
    ]);
    expect(res).toHaveLength(3);
    expect(res[0]).toMatchObject({ messageId: expect.stringMatching(/^msg_/) as string });
    expect(res[0]).toMatchObject({ url: `${rx.url}/one` });
    expect(Array.isArray(res[1])).toBe(true);
    expect(res[1]).toHaveLength(2);
    await eventually(() => expect(rx.requests).toHaveLength(4));
    const one = rx.requests.find((r) => r.url.endsWith("/one"));
    expect(one).toMatchObject({ body: '{"n":1}', signatureError: undefined });
    expect(one?.headers["x-extra"]).toBe("e");
    expect(one?.headers["content-type"]).toBe("application/json");
    const queued = res[2] as { messageId: string };
    const logs = await env.client.logs({ filter: { messageId: queued.messageId } });
    expect(logs.logs[0]).toMatchObject({ queueName: "batch-q" });
    expect(await env.client.queue({ queueName: "batch-q" }).get()).toMatchObject({
      parallelism: 1,
    });
  });

  it("accepts the Python (null) and Go (empty string) item shapes", async () => {
    rx.requests.length = 0;
    const py = await rawBatch([
      {
        destination: `${rx.url}/py`,
        headers: { "Upstash-Method": "PUT", "Content-Type": "text/plain" },
        body: "from-py",
        queue: null,
      },
      { destination: `${rx.url}/py-empty`, headers: {}, body: null, queue: null },
    ]);
    const go = await rawBatch([
      { destination: `${rx.url}/go`, headers: { "upstash-retries": "0" }, body: "", queue: "" },
      { destination: `${rx.url}/go-q`, headers: {}, body: "from-go", queue: "go-q" },
    ]);
    expect(py.status).toBe(201);
    expect(go.status).toBe(201);
    for (const item of [...py.body, ...go.body]) expect(item).toHaveProperty("messageId");
    await eventually(() => expect(rx.requests).toHaveLength(4));
    const put = rx.requests.find((r) => r.url.endsWith("/py"));
    expect(put).toMatchObject({ method: "PUT", body: "from-py", signatureError: undefined });
    expect(bodies().sort()).toEqual(["", "", "from-go", "from-py"]);
  });

  it("answers per-item errors in place while the other items are published", async () => {
    rx.requests.length = 0;
    const { status, body } = await rawBatch([
      { destination: `${rx.url}/ok1`, body: "a" },
      { destination: "not a url", body: "b" },
      { destination: `${rx.url}/bad-retries`, headers: { "upstash-retries": "x" } },
      { destination: "missing-group", body: "c" },
      { destination: `${rx.url}/bad-queue`, queue: "bad queue" },
      { destination: `${rx.url}/ok2`, body: "d" },
    ]);
    expect(status).toBe(201);
    expect(body).toHaveLength(6);
    expect(body[0]).toHaveProperty("messageId");
    for (const i of [1, 2, 3, 4]) expect(body[i]).toHaveProperty("error");
    expect(body[5]).toHaveProperty("messageId");
    await eventually(() => expect(bodies().sort()).toEqual(["a", "d"]));
  });

  it("refuses a body that is not a JSON array", async () => {
    const res = await env.api("/v2/batch", { method: "POST", body: '{"destination":"x"}' });
    expect(res.status).toBe(400);
    expect(await res.json()).toHaveProperty("error");
  });
});
