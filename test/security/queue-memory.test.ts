import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestRedis } from "../harness/redis.js";
import { startOnOneRedis, type TestStashd } from "../harness/stashd.js";
import { FAST_QUEUE } from "../queue/setup.js";

/**
 * Issue 25, hole 6: no byte of a request body is buffered before the request is authenticated and
 * routed, the public webhook path checks its run before reading, and the body bytes in flight are
 * bounded per process (STASHD_MAX_INFLIGHT_BODY_BYTES). Every test sends headers declaring a large
 * body but only a little of it: an answer that waited for the body would never come.
 */
const BUDGET = 1024 * 1024;
let redis: TestRedis;
let s: TestStashd;

beforeAll(async () => {
  ({ redis, stashd: s } = await startOnOneRedis({ maxInflightBodyBytes: BUDGET, ...FAST_QUEUE }));
});
afterAll(async () => {
  await s?.stop();
  await redis?.stop();
});

interface Answer {
  status: number;
  head: string;
  body: string;
  /** Whether the server closed the connection after the answer. */
  closed: boolean;
}

/**
 * An open request: headers declaring `declared` body bytes, then `sent` of them. `answer` resolves
 * with the first response (and whether the server then closed), `rest` sends the remaining bytes.
 */
interface OpenRequest {
  answer: Promise<Answer>;
  rest(): void;
  close(): void;
}

function openRequest(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  declared: number,
  sent: number,
): OpenRequest {
  const sock = net.connect(port, "127.0.0.1");
  let text = "";
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
  sock.on("error", () => undefined);
  sock.write(
    `${method} ${path} HTTP/1.1\r\nhost: x\r\n${lines.join("")}content-length: ${declared}\r\n\r\n`,
  );
  sock.write(Buffer.alloc(sent, 97));
  const answer = new Promise<Answer>((resolve) => {
    let settled = false;
    const settle = (closed: boolean): void => {
      const end = text.indexOf("\r\n\r\n");
      if (settled || end === -1) return;
      const head = text.slice(0, end);
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
      const body = text.slice(end + 4, end + 4 + length);
      if (body.length < length) return;
      settled = true;
      const status = Number(head.split(" ")[1]);
      // Give the server a moment to close the connection after its answer, if it does.
      if (closed) resolve({ status, head, body, closed });
      else setTimeout(() => resolve({ status, head, body, closed: sock.destroyed }), 100);
    };
    sock.on("data", (d: Buffer) => {
      text += d.toString("latin1");
      settle(false);
    });
    sock.on("close", () => settle(true));
  });
  return {
    answer,
    rest: () => sock.write(Buffer.alloc(declared - sent, 97)),
    close: () => sock.destroy(),
  };
}

const BIG = 10 * 1024 * 1024;

async function healthy(): Promise<void> {
  const health = await fetch(`${s.admin?.url ?? ""}/healthz`);
  expect(health.status).toBe(200);
  const ping = await s.kvFetch("/ping", { method: "GET" });
  expect(await ping.json()).toEqual({ result: "PONG" });
}

describe("request bodies of strangers", () => {
  it("a publish without a token is refused without reading its body, and the connection closes", async () => {
    const r = openRequest(s.queue.port, "POST", "/v2/publish/http://127.0.0.1:9/x", {}, BIG, 1000);
    const a = await r.answer;
    r.close();
    expect(a.status).toBe(401);
    expect(JSON.parse(a.body)).toEqual({ error: "missing token" });
    expect(a.head.toLowerCase()).toContain("connection: close");
    expect(a.closed).toBe(true);
    await healthy();
  });

  it("a request to no route is refused without reading its body", async () => {
    const auth = { authorization: `Bearer ${s.queue.token}` };
    const r = openRequest(s.queue.port, "POST", "/v2/nothing-here", auth, BIG, 1000);
    const a = await r.answer;
    r.close();
    expect(a.status).toBe(404);
    expect(JSON.parse(a.body)).toHaveProperty("error");
    expect(a.closed).toBe(true);
  });

  it("a KV request without a token is refused without reading its body", async () => {
    const r = openRequest(s.kv.port, "POST", "/set/k", {}, BIG, 1000);
    const a = await r.answer;
    r.close();
    expect(a.status).toBe(401);
    expect(a.head.toLowerCase()).toContain("connection: close");
    expect(a.closed).toBe(true);
  });

  it("a webhook for an unknown run is answered 404 before its body is read", async () => {
    const path = "/v2/workflows/hooks/user/wfr_unknown/event";
    const r = openRequest(s.queue.port, "POST", path, {}, BIG, 1000);
    const a = await r.answer;
    r.close();
    expect(a.status).toBe(404);
    expect(JSON.parse(a.body)).toEqual({ error: "workflow run wfr_unknown not found" });
    expect(a.closed).toBe(true);
    await healthy();
  });

  it("past the in-flight budget a body is refused with 503 and Retry-After, unread", async () => {
    const auth = { authorization: `Bearer ${s.queue.token}` };
    const size = Math.floor(BUDGET * 0.7);
    // The first publish holds 70% of the budget while its body is still arriving.
    const first = openRequest(
      s.queue.port,
      "POST",
      "/v2/publish/http://127.0.0.1:9/a",
      auth,
      size,
      10,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const second = openRequest(
      s.queue.port,
      "POST",
      "/v2/publish/http://127.0.0.1:9/b",
      auth,
      size,
      10,
    );
    const refused = await second.answer;
    second.close();
    expect(refused.status).toBe(503);
    expect(refused.head.toLowerCase()).toContain("retry-after: 1");
    expect(JSON.parse(refused.body).error).toMatch(/too many request body bytes in flight/);
    // The KV gateway shares the budget.
    const kvAuth = { authorization: `Bearer ${s.kv.token}` };
    const kv = openRequest(s.kv.port, "POST", "/set/k", kvAuth, size, 10);
    const kvRefused = await kv.answer;
    kv.close();
    expect(kvRefused.status).toBe(503);
    expect(JSON.parse(kvRefused.body).error).toMatch(/^ERR too many request body bytes/);
    await healthy();
    // The first one completes, and its bytes are given back: the next body fits again.
    first.rest();
    expect((await first.answer).status).toBe(201);
    first.close();
    const again = await fetch(`${s.queue.url}/v2/publish/http://127.0.0.1:9/c`, {
      method: "POST",
      headers: auth,
      body: Buffer.alloc(size, 97),
    });
    expect(again.status).toBe(201);
  });
});
