import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { credentialsOfAsync, spawnStashd } from "../harness/process.js";
import { eventually } from "../harness/eventually.js";

/**
 * Reliability scenario 5 (docs/reliability.md): the real `bin/stashd` at log level debug, used
 * with right and wrong tokens on both ports (header and query forms) and through a queue Redis
 * outage (5xx answers are logged) and the restart of its managed KV redis-server for a script
 * that cannot be killed, never writes a token, signing key or Redis password to its stdout or
 * stderr.
 */
const WRONG = "wrong-token-d7f1c2a9e4b3";
let dataDir: string;
let child: ChildProcess;
let output = "";

interface Creds {
  running: boolean;
  kv: { url: string; databases: { token: string; readonlyToken: string }[] };
  queue?: { url: string; token: string; currentSigningKey: string; nextSigningKey: string };
}

function credentials(): Promise<Creds> {
  return credentialsOfAsync<Creds>(dataDir);
}

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-logs-"));
  child = spawnStashd(dataDir, {
    env: {
      STASHD_LOG_LEVEL: "debug",
      STASHD_ACCESS_LOG: "true",
      // One process: a command label is trusted per process (instrument.ts), so with several
      // workers a first-seen SET answered 400 would be counted as `other`.
      STASHD_WORKERS: "1",
      STASHD_MANAGED_RESTART_MAX_BACKOFF_MS: "200",
      STASHD_KV_SCRIPT_TIME_LIMIT_MS: "200",
      STASHD_KV_UNKILLABLE_SCRIPT_GRACE_MS: "200",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
});
afterAll(async () => {
  if (child.exitCode === null) {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  }
  rmSync(dataDir, { recursive: true, force: true });
});

/** Every secret the data dir holds: tokens, signing keys, managed Redis passwords. */
function secrets(c: Creds): string[] {
  const read = (...p: string[]): string => readFileSync(path.join(dataDir, ...p), "utf8").trim();
  const registry = JSON.parse(read("kv", "databases.json")) as unknown;
  const passwords = JSON.stringify(registry).match(/"password":"([^"]+)"/g) ?? [];
  return [
    ...c.kv.databases.flatMap((d) => [d.token, d.readonlyToken]),
    c.queue?.token ?? "",
    c.queue?.currentSigningKey ?? "",
    c.queue?.nextSigningKey ?? "",
    ...passwords.map((p) => p.slice('"password":"'.length, -1)),
    read("queue-redis", "password"),
    read("kv", "redis", "default", "password"),
    WRONG,
  ].filter((s) => s.length >= 8);
}

async function exercise(c: Creds): Promise<void> {
  const queue = c.queue as NonNullable<Creds["queue"]>;
  const db = c.kv.databases[0] as Creds["kv"]["databases"][number];
  const kv = (token: string, body: string): Promise<Response> =>
    fetch(`${c.kv.url}/`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body });
  expect((await kv(db.token, '["SET","k","v"]')).status).toBe(200);
  expect((await kv(db.readonlyToken, '["SET","k","v"]')).status).toBe(400);
  expect((await kv(WRONG, '["GET","k"]')).status).toBe(401);
  expect((await fetch(`${c.kv.url}/get/k?_token=${WRONG}`)).status).toBe(401);
  const publish = (auth: string, query = ""): Promise<Response> =>
    fetch(`${queue.url}/v2/publish/http://127.0.0.1:1/x${query}`, {
      method: "POST",
      headers: auth === "" ? {} : { authorization: `Bearer ${auth}` },
      body: "b",
    });
  expect((await publish(queue.token)).status).toBe(201);
  expect((await publish(WRONG)).status).toBe(401);
  expect((await publish("", `?qstash_token=${WRONG}`)).status).toBe(401);
  const pid = Number(readFileSync(path.join(dataDir, "queue-redis", "redis.pid"), "utf8"));
  process.kill(pid, "SIGKILL");
  await eventually(async () => expect((await publish(queue.token)).status).toBe(503));
  await eventually(async () => expect((await publish(queue.token)).status).toBe(201), {
    timeoutMs: 10_000,
  });
  // A script that wrote and loops (issue 11): its managed redis-server is stopped and restarted.
  const loop = JSON.stringify([
    "EVAL",
    "redis.call('SET', KEYS[1], '1') while true do end",
    "1",
    "k",
  ]);
  expect((await kv(db.token, loop)).status).toBe(503);
  await eventually(async () => expect((await kv(db.token, '["GET","k"]')).status).toBe(200), {
    timeoutMs: 10_000,
  });
}

describe("logs at level debug", () => {
  it("never contain a token, signing key or password", async () => {
    // The banner first, then `credentials`: asking it over and over would take CPU from the start.
    await eventually(() => expect(output).toContain("stashd is running"), { timeoutMs: 20_000 });
    const c = await eventually(
      async () => {
        const got = await credentials();
        if (!got.running || !got.queue) throw new Error("not running yet");
        return got;
      },
      { timeoutMs: 20_000, intervalMs: 50 },
    );
    await exercise(c);
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
    expect(output).toMatch(/debug|info/);
    expect(output).toMatch(/Redis is unreachable/);
    // 2 KV tokens, queue token, 2 signing keys, 3 passwords (registry, 2 managed Redis), WRONG.
    expect(secrets(c).length).toBeGreaterThanOrEqual(9);
    const leaked = secrets(c).filter((s) => output.includes(s));
    expect(leaked).toEqual([]);
    expectRequestLines(output);
  });
});

/**
 * One JSON line per request (logs are JSON when stderr is not a terminal): method, route or
 * command, status, duration and bytes, and nothing else from the request (no URL: KV paths hold
 * keys and values, query strings may hold tokens). Then a final "stopped" line.
 */
function expectRequestLines(out: string): void {
  const entries = out
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const requests = entries.filter((e) => e.msg === "request");
  const routes = requests.map((e) => `${String(e.scope)} ${String(e.route)} ${String(e.status)}`);
  expect(routes).toContain("stashd:kv SET 200");
  expect(routes).toContain("stashd:kv SET 400");
  expect(routes).toContain("stashd:kv unmatched 401");
  expect(routes).toContain("stashd:queue POST publish ** 201");
  expect(routes).toContain("stashd:queue unmatched 401");
  for (const e of requests) {
    expect(Object.keys(e).sort()).toEqual(
      ["bytes", "level", "method", "ms", "msg", "route", "scope", "status", "time"].sort(),
    );
  }
  expect(entries.at(-1)).toMatchObject({ msg: "stopped", scope: "stashd" });
  // The script's shutdown is an error naming the database (and, checked above, no secret).
  expect(entries).toContainEqual(
    expect.objectContaining({
      level: "error",
      db: "default",
      msg: expect.stringMatching(/SHUTDOWN NOSAVE/) as unknown,
    }),
  );
  expect(out).not.toContain("/x?qstash_token");
}
