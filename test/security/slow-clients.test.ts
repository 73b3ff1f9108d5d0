import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestRedis } from "../harness/redis.js";
import { startOnOneRedis, type TestStashd } from "../harness/stashd.js";

/**
 * Reliability scenarios 4 and 5 (docs/reliability.md): a client trickling its body one byte at a
 * time, slower than the request deadline, is cut off on both ports, and both keep serving.
 */
const TIMEOUT_MS = 400;
let redis: TestRedis;
let s: TestStashd;

beforeAll(async () => {
  ({ redis, stashd: s } = await startOnOneRedis({ requestTimeoutMs: TIMEOUT_MS }));
});
afterAll(async () => {
  await s?.stop();
  await redis?.stop();
});

/** Sends headers promising 10 000 bytes, then one byte every 50 ms until the server hangs up. */
function trickle(port: number, path: string, token: string): Promise<{ text: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    let text = "";
    const sock = net.connect(port, "127.0.0.1", () => {
      sock.write(
        `POST ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\n` +
          "content-length: 10000\r\n\r\n",
      );
    });
    const timer = setInterval(() => sock.write("a"), 50);
    sock.on("data", (d: Buffer) => (text += d.toString()));
    sock.on("error", () => undefined);
    sock.on("close", () => {
      clearInterval(timer);
      resolve({ text, ms: Date.now() - started });
    });
  });
}

describe("slow-trickle bodies", () => {
  it("cuts off a trickling client on the KV port and keeps serving", async () => {
    const { text, ms } = await trickle(s.kv.port, "/set/slow/x", s.kv.token);
    expect(text).toMatch(/^HTTP\/1\.1 408/);
    expect(ms).toBeLessThan(TIMEOUT_MS * 10);
    const ok = await s.kvFetch("/", { body: '["EXISTS","slow"]' });
    expect(await ok.json()).toEqual({ result: 0 });
  });

  it("cuts off a trickling client on the queue port and keeps serving", async () => {
    const { text, ms } = await trickle(
      s.queue.port,
      "/v2/publish/http://127.0.0.1:1/slow",
      s.queue.token,
    );
    expect(text).toMatch(/^HTTP\/1\.1 408/);
    expect(ms).toBeLessThan(TIMEOUT_MS * 10);
    const ok = await fetch(`${s.queue.url}/v2/keys`, {
      headers: { authorization: `Bearer ${s.queue.token}` },
    });
    expect(ok.status).toBe(200);
  });
});
