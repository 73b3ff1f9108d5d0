import { afterAll, beforeAll, expect, test } from "vitest";
import { consoleCookie, consoleEnv, type ConsoleEnv } from "./harness.js";
import { redisOn } from "./kv-helpers.js";

/**
 * The KV browser's console API over plain HTTP: the namespace tree, delete by pattern (count
 * first), the scan's progress and size column, binary members as hex, and bad input refused.
 */
let env: ConsoleEnv;
let cookie: string;

beforeAll(async () => {
  env = await consoleEnv({ browser: false });
  cookie = await consoleCookie(env);
  await redisOn(env, "MSET", "app:user:1", "a", "app:user:2", "b", "app:cfg", "c", "x*y:1", "d");
});
afterAll(() => env?.close());

function call(path: string, body?: unknown): Promise<Response> {
  return fetch(`${env.url}/api/kv/default/${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { cookie, "x-stashd-console": "1", "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

test("tree: one level of namespaces with key counts, under a prefix, glob characters literal", async () => {
  const top = (await (await call("tree?separator=:")).json()) as {
    namespaces: { name: string; count: number }[];
    complete: boolean;
  };
  expect(top.complete).toBe(true);
  expect(top.namespaces).toEqual(
    expect.arrayContaining([
      { name: "app", count: 3 },
      { name: "x*y", count: 1 },
    ]),
  );
  const app = (await (await call("tree?separator=:&prefix=app:")).json()) as {
    namespaces: { name: string; count: number }[];
    keys: number;
  };
  expect(app).toMatchObject({ namespaces: [{ name: "user", count: 2 }], keys: 1 });
  // "x*y:" is a literal prefix, not a glob: it does not match "app:..." keys.
  const literal = (await (await call("tree?prefix=x*y:")).json()) as { keys: number };
  expect(literal.keys).toBe(1);
  const empty = await call("tree?separator=");
  expect(empty.status).toBe(400);
  expect(await empty.json()).toEqual({ error: "separator must not be empty" });
});

test("delete-matching: a dry run counts, the real run deletes exactly the matching keys", async () => {
  const plan = (await (
    await call("delete-matching", { match: "app:user:*", dryRun: true })
  ).json()) as {
    count: number;
    sample: string[];
  };
  expect(plan.count).toBe(2);
  expect([...plan.sample].sort()).toEqual(["app:user:1", "app:user:2"]);
  expect(await redisOn(env, "EXISTS", "app:user:1")).toBe(1);
  const done = await (await call("delete-matching", { match: "app:user:*" })).json();
  expect(done).toEqual({ deleted: 2 });
  expect(await redisOn(env, "EXISTS", "app:user:1", "app:user:2", "app:cfg")).toBe(1);
  // Like every write, it needs the session and the console's CSRF header.
  const csrf = await fetch(`${env.url}/api/kv/default/delete-matching`, {
    method: "POST",
    headers: { cookie, "content-type": "application/json" },
    body: JSON.stringify({ match: "*" }),
  });
  expect(csrf.status).toBe(403);
  const anonymous = await fetch(`${env.url}/api/kv/default/delete-matching`, {
    method: "POST",
    headers: { "x-stashd-console": "1", "content-type": "application/json" },
    body: JSON.stringify({ match: "*" }),
  });
  expect(anonymous.status).toBe(401);
  expect(await redisOn(env, "EXISTS", "app:cfg")).toBe(1);
  for (const bad of [{ match: "" }, { match: 3 }, {}]) {
    const res = await call("delete-matching", bad);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/match must/);
  }
});

test("scan: size per key and how much was scanned; binary members come as hex", async () => {
  const page = (await (await call("scan?match=app:*")).json()) as {
    keys: { key: string; size: number }[];
    scanned: number;
    total: number;
  };
  expect(page.keys.map((k) => k.key)).toEqual(["app:cfg"]);
  expect(page.keys[0]?.size).toBeGreaterThan(0);
  expect(page.total).toBe(Number(await redisOn(env, "DBSIZE")));
  expect(page.scanned).toBe(page.total);
  await redisOn(env, "EVAL", "return redis.call('SADD', KEYS[1], string.char(255), 'é')", "1", "s");
  const view = (await (await call("key?key=s")).json()) as { value: unknown[] };
  expect(view.value).toEqual(expect.arrayContaining([{ hex: "ff" }, "é"]));
});

type Arg = string | { hex: string };
const edit = (body: unknown) => call("edit", body);
/** A key's bytes as hex, read with base64 through the REST API. */
async function bytesOf(...command: string[]): Promise<string> {
  const res = await env.q.stashd.kvFetch("/", {
    body: JSON.stringify(command),
    headers: { "upstash-encoding": "base64" },
  });
  const { result } = (await res.json()) as { result: string };
  return Buffer.from(result, "base64").toString("hex");
}

test("edit: hex arguments reach Redis as their exact bytes, compared as bytes first", async () => {
  const set = (value: Arg) => edit({ key: "raw", writes: [["SET", "raw", value]] });
  expect(await (await set({ hex: "ff00fe0a80" })).json()).toEqual({ wrote: true });
  expect(await bytesOf("GET", "raw")).toBe("ff00fe0a80");
  const cas = (expected: Arg, value: Arg) =>
    edit({ key: "raw", read: ["GET", "raw"], expected, writes: [["SET", "raw", value]] });
  // A different expectation (the UTF-8 text "ff00fe0a80") writes nothing.
  expect(await (await cas("ff00fe0a80", { hex: "00" })).json()).toEqual({ wrote: false });
  expect(await bytesOf("GET", "raw")).toBe("ff00fe0a80");
  expect(await (await cas({ hex: "ff00fe0a80" }, "é")).json()).toEqual({ wrote: true });
  expect(await bytesOf("GET", "raw")).toBe("c3a9");
  // A binary hash field: its value replaced when still what the page showed.
  await edit({ key: "rawh", writes: [["HSET", "rawh", { hex: "ff01" }, { hex: "00ff" }]] });
  const changed = await edit({
    key: "rawh",
    read: ["HGET", "rawh", { hex: "ff01" }],
    expected: { hex: "00ff" },
    writes: [["HSET", "rawh", { hex: "ff01" }, { hex: "c0" }]],
  });
  expect(await changed.json()).toEqual({ wrote: true });
  const view = (await (await call("key?key=rawh")).json()) as { value: unknown };
  expect(view.value).toEqual([[{ hex: "ff01" }, { hex: "c0" }]]);
});

test("edit: bad input is a 400 naming the problem, a Redis error is an error", async () => {
  for (const [body, message] of [
    [{ writes: [["SET", "k", "v"]] }, /key must/],
    [{ key: "k", writes: [] }, /writes must be 1-10/],
    [{ key: "k", writes: [["SET", "k", { hex: "f" }]] }, /each write must/],
    [{ key: "k", writes: [["SET", "k", { hex: "zz" }]] }, /each write must/],
    [{ key: "k", writes: [["SET", "k", 1]] }, /each write must/],
    [{ key: "k", read: [], writes: [["SET", "k", "v"]] }, /read must/],
    [{ key: "k", read: ["GET", "k"], writes: [["SET", "k", "v"]] }, /expected must/],
  ] as const) {
    const res = await edit(body);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(message);
  }
  await redisOn(env, "SET", "not-a-list", "x");
  const wrong = await edit({ key: "not-a-list", writes: [["LSET", "not-a-list", "0", "v"]] });
  expect(wrong.status).toBeGreaterThanOrEqual(400);
  expect(((await wrong.json()) as { error: string }).error).toMatch(/WRONGTYPE/);
});
