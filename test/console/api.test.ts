import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { CONSOLE_TOKEN, consoleEnv, type ConsoleEnv } from "./harness.js";

/** The console API over HTTP, as a browser would call it, without the browser. */
let env: ConsoleEnv;
beforeAll(async () => {
  env = await consoleEnv({ browser: false });
});
afterAll(() => env?.close());

const CSRF = { "x-stashd-console": "1" };

async function login(token: string): Promise<Response> {
  return fetch(`${env.url}/api/login`, {
    method: "POST",
    headers: { ...CSRF, "content-type": "application/json" },
    body: JSON.stringify({ token }),
  });
}

async function session(token = env.q.stashd.queue.token): Promise<string> {
  const res = await login(token);
  expect(res.status).toBe(200);
  return (res.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
}

function call(cookie: string, path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("cookie", cookie);
  for (const [k, v] of Object.entries(CSRF)) if (!headers.has(k)) headers.set(k, v);
  return fetch(`${env.url}/api/${path}`, { ...init, headers });
}

describe("login and sessions", () => {
  test("the page shell is served with a strict content security policy", async () => {
    const res = await fetch(env.url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(await res.text()).toContain("/console/assets/app.js");
    const js = await fetch(`${env.url}/assets/app.js`);
    expect(js.headers.get("content-type")).toContain("javascript");
  });

  test("no data without a session: every API answers 401 JSON", async () => {
    for (const path of ["session", "summary", "queue/dlq", "kv/default/scan"]) {
      const res = await fetch(`${env.url}/api/${path}`);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: "log in first" });
    }
  });

  test("a wrong token is refused; the queue token and the console token log in", async () => {
    expect((await login("nope")).status).toBe(401);
    expect((await login("")).status).toBe(401);
    const res = await login(env.q.stashd.queue.token);
    const cookie = res.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/^stashd_console=[A-Za-z0-9_-]{43};/);
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Strict");
    expect(cookie).toContain("Path=/console");
    const viaConsoleToken = await session(CONSOLE_TOKEN);
    const s = await call(viaConsoleToken, "session");
    expect(await s.json()).toEqual({ databases: ["default"] });
  });

  test("mutating calls need the CSRF header, even with a valid session", async () => {
    const cookie = await session();
    const res = await fetch(`${env.url}/api/queue/keys/rotate`, {
      method: "POST",
      headers: { cookie },
    });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: string }).error).toContain("x-stashd-console");
    const noHeaderLogin = await fetch(`${env.url}/api/login`, {
      method: "POST",
      body: JSON.stringify({ token: env.q.stashd.queue.token }),
    });
    expect(noHeaderLogin.status).toBe(403);
  });

  test("logout ends the session", async () => {
    const cookie = await session();
    expect((await call(cookie, "session")).status).toBe(200);
    const out = await call(cookie, "logout", { method: "POST" });
    expect(out.headers.get("set-cookie")).toContain("Max-Age=0");
    expect((await call(cookie, "session")).status).toBe(401);
  });

  test("odd paths: traversal, unknown APIs, bad JSON", async () => {
    expect((await fetch(`${env.url}/assets/..%2f..%2fpackage.json`)).status).toBe(404);
    expect((await fetch(`${env.url}/assets/nope.js`)).status).toBe(404);
    const cookie = await session();
    expect((await call(cookie, "nope")).status).toBe(404);
    const bad = await fetch(`${env.url}/api/login`, { method: "POST", headers: CSRF, body: "{" });
    expect(bad.status).toBe(400);
    expect((await call(cookie, "kv/nope/scan")).status).toBe(404);
    const notCommands = await call(cookie, "kv/default/exec", {
      method: "POST",
      body: JSON.stringify({ commands: [[1, 2]] }),
    });
    expect(notCommands.status).toBe(400);
  });
});

describe("console API over the public APIs", () => {
  test("queue calls go through with the server's token", async () => {
    const cookie = await session();
    const res = await call(cookie, "queue/keys");
    expect(await res.json()).toEqual({
      current: env.q.stashd.queue.currentSigningKey,
      next: env.q.stashd.queue.nextSigningKey,
    });
    const missing = await call(cookie, "queue/messages/msg_nope");
    expect(missing.status).toBe(404);
  });

  test("KV exec uses the read-only token unless the standard one is asked for", async () => {
    const cookie = await session();
    const exec = (commands: string[][], token?: string) =>
      call(cookie, "kv/default/exec", {
        method: "POST",
        body: JSON.stringify({ commands, ...(token ? { token } : {}) }),
      }).then((r) => r.json() as Promise<{ results: unknown[] }>);
    const ro = await exec([["SET", "ro-test", "x"]]);
    expect(JSON.stringify(ro.results[0])).toContain("NOPERM");
    const rw = await exec(
      [
        ["SET", "ro-test", "x"],
        ["GET", "ro-test"],
      ],
      "standard",
    );
    expect(rw.results).toEqual([{ result: "OK" }, { result: "x" }]);
  });

  test("scan pages 1,000 keys by cursor, filtered by pattern and type", async () => {
    const cookie = await session();
    const keys = Array.from({ length: 1000 }, (_, i) => [`page:${i}`, String(i)]);
    await env.q.stashd.kvFetch("/", { body: JSON.stringify(["MSET", ...keys.flat()]) });
    await env.q.stashd.kvFetch("/", { body: JSON.stringify(["HSET", "page:hash", "f", "v"]) });
    const seen = new Set<string>();
    let cursor = "0";
    let pages = 0;
    do {
      const res = await call(cookie, `kv/default/scan?match=page:*&type=string&cursor=${cursor}`);
      const page = (await res.json()) as { cursor: string; keys: { key: string; type: string }[] };
      expect(page.keys.length).toBeLessThanOrEqual(400);
      for (const k of page.keys) {
        expect(k.type).toBe("string");
        seen.add(k.key);
      }
      cursor = page.cursor;
      pages++;
    } while (cursor !== "0");
    expect(seen.size).toBe(1000);
    expect(pages).toBeGreaterThan(1);
  });

  test("key view pages a collection and reports type, TTL and size", async () => {
    const cookie = await session();
    const members = Array.from({ length: 250 }, (_, i) => String(i));
    await env.q.stashd.kvFetch("/", { body: JSON.stringify(["RPUSH", "big-list", ...members]) });
    await env.q.stashd.kvFetch("/", { body: JSON.stringify(["EXPIRE", "big-list", "100"]) });
    const first = (await (await call(cookie, "kv/default/key?key=big-list")).json()) as {
      type: string;
      ttl: number;
      length: number;
      cursor: string;
      value: string[];
    };
    expect(first).toMatchObject({ type: "list", length: 250, cursor: "100" });
    expect(first.ttl).toBeGreaterThan(90_000);
    expect(first.value).toEqual(members.slice(0, 100));
    const last = (await (await call(cookie, "kv/default/key?key=big-list&cursor=200")).json()) as {
      cursor: string;
      value: string[];
    };
    expect(last).toMatchObject({ cursor: "", value: members.slice(200) });
    expect((await call(cookie, "kv/default/key?key=no-such-key")).status).toBe(404);
  });

  test("summary counts messages, DLQ and keys", async () => {
    const cookie = await session();
    await env.q.client.publishJSON({ url: "http://127.0.0.1:9/x", body: {}, delay: 3600 });
    const s = (await (await call(cookie, "summary")).json()) as {
      queue: { delayed: number; pending: number; dlq: number };
      databases: { name: string; keys: number }[];
      schedules: number;
    };
    expect(s.queue.delayed).toBeGreaterThanOrEqual(1);
    expect(s.queue.pending).toBeGreaterThanOrEqual(1);
    expect(s.schedules).toBe(0);
    expect(s.databases[0]?.name).toBe("default");
    expect(s.databases[0]?.keys).toBeGreaterThan(0);
  });
});

test("the console shares the admin listener: other paths stay the listener's", async () => {
  const health = await fetch(env.url.replace("/console", "/healthz"));
  expect(await health.json()).toEqual({ status: "ok" });
  const similar = await fetch(env.url.replace("/console", "/consolex"));
  expect(similar.status).toBe(404);
});
