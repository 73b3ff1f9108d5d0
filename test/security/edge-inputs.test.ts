import http from "node:http";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestRedis } from "../harness/redis.js";
import { startOnOneRedis, type TestStashd } from "../harness/stashd.js";

/**
 * Hostile inputs at the HTTP edge (issue 25, item 12): a malformed percent-escape in a console
 * path, a malformed request pipelined after valid ones, and console login guessing. Each is
 * answered with a JSON `{"error"}` while other requests and /healthz keep answering.
 */
const PER_ADDRESS = 5;
const GLOBAL = 8;
const WINDOW_MS = 1_500;
let redis: TestRedis;
let s: TestStashd;
let admin: string;

beforeAll(async () => {
  ({ redis, stashd: s } = await startOnOneRedis({
    consoleLoginFailuresPerAddress: PER_ADDRESS,
    consoleLoginFailuresGlobal: GLOBAL,
    consoleLoginWindowMs: WINDOW_MS,
  }));
  admin = s.admin?.url ?? "";
});
afterAll(async () => {
  await s?.stop();
  await redis?.stop();
});

const CSRF = { "x-stashd-console": "1", "content-type": "application/json" };

function login(token: string): Promise<Response> {
  return fetch(`${admin}/console/api/login`, {
    method: "POST",
    headers: CSRF,
    body: JSON.stringify({ token }),
  });
}

/** A login from another loopback address (127.0.0.x), as another client would. */
function loginFrom(localAddress: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${admin}/console/api/login`, {
      method: "POST",
      headers: CSRF,
      localAddress,
    });
    req.on("response", (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end(JSON.stringify({ token }));
  });
}

async function expectServing(): Promise<void> {
  const health = await fetch(`${admin}/healthz`);
  expect(health.status).toBe(200);
  const ping = await s.kvFetch("/ping");
  expect(await ping.json()).toEqual({ result: "PONG" });
}

/** Writes `raw` in one write on a fresh connection; resolves with all the server sent. */
function rawExchange(port: number, raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    const sock = net.connect(port, "127.0.0.1", () => sock.write(raw));
    sock.setEncoding("latin1");
    sock.on("data", (d: string) => (text += d));
    sock.on("error", reject);
    sock.on("close", () => resolve(text));
    sock.setTimeout(5_000, () => sock.destroy());
  });
}

/** The status line and body of each HTTP/1.1 response in `text` (bodies have Content-Length). */
function responses(text: string): { status: number; body: string }[] {
  const out: { status: number; body: string }[] = [];
  let rest = text;
  while (rest.startsWith("HTTP/1.1 ")) {
    const end = rest.indexOf("\r\n\r\n");
    const head = rest.slice(0, end);
    const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
    out.push({ status: Number(head.slice(9, 12)), body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  expect(rest).toBe("");
  return out;
}

describe("malformed percent-escapes in paths", () => {
  it("a console KV path with a bad escape answers 400 JSON, not 500", async () => {
    const res = await login(s.queue.token);
    const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
    for (const bad of ["%E0%A4%A", "%zz", "%", "ab%C3"]) {
      const scan = await fetch(`${admin}/console/api/kv/${bad}/scan`, { headers: { cookie } });
      expect(scan.status).toBe(400);
      expect(await scan.json()).toEqual({
        error: expect.stringMatching(/malformed percent-escape/),
      });
    }
    const good = await fetch(`${admin}/console/api/kv/default/scan`, { headers: { cookie } });
    expect(good.status).toBe(200);
    await expectServing();
  });

  it("KV and queue paths with bad escapes answer JSON, not 500", async () => {
    const kv = await s.kvFetch("/get/%E0%A4%A");
    expect(kv.status).toBe(200);
    expect(await kv.json()).toEqual({ result: null });
    const queue = await fetch(`${s.queue.url}/v2/queues/%E0%A4%A`, {
      headers: { authorization: `Bearer ${s.queue.token}` },
    });
    expect(queue.status).toBeLessThan(500);
    expect(await queue.json()).toHaveProperty("error");
  });
});

describe("a malformed request pipelined after valid ones", () => {
  it("answers the valid ones first, then 400 JSON, then closes (KV port)", async () => {
    const auth = `authorization: Bearer ${s.kv.token}\r\n`;
    const text = await rawExchange(
      s.kv.port,
      `GET /set/pipelined-a/1 HTTP/1.1\r\nhost: x\r\n${auth}\r\n` +
        `GET /incr/pipelined-b HTTP/1.1\r\nhost: x\r\n${auth}\r\n` +
        "GARBAGE \x01\x02 nonsense\r\n\r\n",
    );
    const got = responses(text);
    expect(got.map((r) => r.status)).toEqual([200, 200, 400]);
    expect(JSON.parse(got[0]?.body ?? "")).toEqual({ result: "OK" });
    expect(JSON.parse(got[1]?.body ?? "")).toEqual({ result: 1 });
    expect(JSON.parse(got[2]?.body ?? "")).toEqual({ error: "ERR malformed HTTP request" });
    await expectServing();
  });

  it("does the same on the queue port and on the admin listener", async () => {
    const auth = `authorization: Bearer ${s.queue.token}\r\n`;
    const queue = responses(
      await rawExchange(
        s.queue.port,
        `GET /v2/queues HTTP/1.1\r\nhost: x\r\n${auth}\r\n` +
          `GET /v2/queues HTTP/1.1\r\nhost: x\r\n${auth}\r\n` +
          "\x16\x03\x01 not http\r\n\r\n",
      ),
    );
    expect(queue.map((r) => r.status)).toEqual([200, 200, 400]);
    const probes = responses(
      await rawExchange(
        s.admin?.port ?? 0,
        "GET /healthz HTTP/1.1\r\nhost: x\r\n\r\nGET /healthz HTTP/1.1\r\nhost: x\r\n\r\nBAD\r\n\r\n",
      ),
    );
    expect(probes.map((r) => r.status)).toEqual([200, 200, 400]);
    expect(JSON.parse(probes[2]?.body ?? "")).toEqual({ error: "malformed HTTP request" });
  });
});

describe("console login bodies", () => {
  it("refuses a login body past 4 KiB with 413 JSON before reading it (a stranger's 10 MB logins were held whole)", async () => {
    const res = await fetch(`${admin}/console/api/login`, {
      method: "POST",
      headers: CSRF,
      body: JSON.stringify({ token: "x", pad: " ".repeat(1024 * 1024) }),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: "console requests are limited to 4096 bytes" });
    // A real login still fits.
    expect((await login(s.queue.token)).status).toBe(200);
  });
});

describe("console login guessing", () => {
  it("refuses an address past its failure budget with 429 + Retry-After, even the right token", async () => {
    await new Promise((r) => setTimeout(r, WINDOW_MS)); // a fresh window (earlier tests logged in)
    for (let i = 0; i < PER_ADDRESS; i++) expect((await login(`guess-${i}`)).status).toBe(401);
    const refused = await login("one more guess");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await refused.json()).toEqual({
      error: expect.stringMatching(/too many failed console login attempts/),
    });
    // While refused, the right token is not even compared: a lock-out answers no guesses.
    expect((await login(s.queue.token)).status).toBe(429);
    await expectServing();
    // Another address still has its own budget, until all addresses together used theirs.
    const others = GLOBAL - PER_ADDRESS;
    for (let i = 0; i < others; i++) expect(await loginFrom("127.0.0.2", `g-${i}`)).toBe(401);
    expect(await loginFrom("127.0.0.3", s.queue.token)).toBe(429);
    // The window ends: the right token logs in again.
    await new Promise((r) => setTimeout(r, WINDOW_MS));
    expect((await login(s.queue.token)).status).toBe(200);
    expect(await loginFrom("127.0.0.3", s.queue.token)).toBe(200);
  });
});
