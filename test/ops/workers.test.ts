import { spawnSync } from "node:child_process";
import http from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { credentialsOf } from "../../src/kv/databases/database-manager.js";
import { createDatabase } from "../../src/kv/databases/registry.js";
import { ARTIFACTS, chromiumPath } from "../console/harness.js";
import { eventually } from "../harness/eventually.js";
import { freePort } from "../harness/redis.js";
import { spawnStashdKeepingStderr, whenRunning, type StashdProcess } from "../harness/process.js";
import { startReceiver, type TestReceiver } from "../queue/receiver.js";
import { counter, processesMentioning } from "./helpers.js";

/**
 * `stashd start` with two worker processes (issue 29; docs/operations.md, Workers), as a user
 * runs it (bin/stashd, managed redis-servers): a SIGKILLed worker is replaced while the other
 * keeps serving, /metrics adds up every worker, SIGTERM drains every worker, and a SIGKILL of the
 * supervisor under publish load loses no acknowledged message.
 */
interface Creds {
  running: boolean;
  kv: { url: string; databases: { token: string }[] };
  queue: { url: string; token: string; currentSigningKey: string; nextSigningKey: string };
  admin: { url: string };
}

const ENV = {
  STASHD_WORKERS: "2",
  STASHD_SHUTDOWN_GRACE_MS: "2000",
  STASHD_QUEUE_LEASE_MS: "1000",
  STASHD_QUEUE_REAP_MS: "50",
  STASHD_QUEUE_IDLE_POLL_MS: "50",
  STASHD_QUEUE_BACKOFF_SCALE_MS: "1",
  STASHD_LOG_LEVEL: "warn",
  // The console's charts: one-second points (a minute of them), a worker's silence noticed in 1 s.
  STASHD_CONSOLE_CHART_STEP_MS: "1000",
  STASHD_CONSOLE_CHART_GATHER_TIMEOUT_MS: "1000",
};

/** GET /console/api/<path> after a login with the queue token (the console's CSRF header). */
async function consoleCall(creds: Creds, path: string): Promise<unknown> {
  const csrf = { "x-stashd-console": "1" };
  const login = await fetch(`${creds.admin.url}/console/api/login`, {
    method: "POST",
    headers: { ...csrf, "content-type": "application/json" },
    body: JSON.stringify({ token: creds.queue.token }),
  });
  expect(login.status).toBe(200);
  const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  const res = await fetch(`${creds.admin.url}/console/api/${path}`, {
    headers: { ...csrf, cookie },
  });
  expect(res.status).toBe(200);
  return res.json();
}

/** The Charts page in Chromium, logged in: the text of its warning about a worker left out. */
async function chartsPageWarning(creds: Creds): Promise<string | null> {
  const browser = await chromium.launch({ executablePath: chromiumPath() });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(10_000);
    await page.goto(`${creds.admin.url}/console`);
    await page.fill("input[name=token]", creds.queue.token);
    await page.click("button[type=submit]");
    await page.waitForSelector("nav.side");
    await page.goto(`${creds.admin.url}/console#/charts`);
    const warning = await page.locator("[data-testid=worker-missing]").textContent();
    await page.screenshot({ path: path.join(ARTIFACTS, "charts-worker-missing.png") });
    return warning;
  } finally {
    await browser.close();
  }
}

let rx: TestReceiver;
let keys = { current: "", next: "" };
const dirs: string[] = [];
const procs: StashdProcess[] = [];

beforeAll(async () => {
  rx = await startReceiver(() => keys);
});
afterEach(async () => {
  for (const p of procs.splice(0)) {
    if (p.child.exitCode === null && p.child.signalCode === null) {
      const exited = new Promise((r) => p.child.once("exit", r));
      p.child.kill("SIGTERM");
      await exited;
    }
  }
});
afterAll(async () => {
  await rx.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function startWorkers(dataDir: string, queuePort?: number): Promise<Creds> {
  const proc = spawnStashdKeepingStderr(dataDir, {
    env: ENV,
    ...(queuePort ? { queuePort } : {}),
  });
  procs.push(proc);
  const creds = await whenRunning<Creds>(dataDir, proc, 30_000);
  keys = { current: creds.queue.currentSigningKey, next: creds.queue.nextSigningKey };
  return creds;
}

function newDataDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "stashd-workers-"));
  dirs.push(dir);
  return dir;
}

function supervisor(): StashdProcess {
  const p = procs.at(-1);
  if (!p) throw new Error("no stashd");
  return p;
}

/** Pids of the supervisor's worker processes (its node children; the rest are redis-servers). */
function workerPids(supervisorPid: number): number[] {
  const r = spawnSync("ps", ["-o", "pid=,comm=", "--ppid", String(supervisorPid)], {
    encoding: "utf8",
  });
  return r.stdout
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter(([, comm]) => comm === "node")
    .map(([pid]) => Number(pid))
    .sort((a, b) => a - b);
}

/**
 * A POST on a connection of its own (node:http without an agent, closed after the answer), so
 * requests spread over the workers: node:cluster hands each new connection to the next worker.
 */
function postFresh(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", headers, agent: false, timeout: timeoutMs });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", reject);
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
      );
    });
    req.end(body);
  });
}

/** One KV command on a connection of its own. */
async function kv(
  creds: Creds,
  command: unknown[],
  timeoutMs = 25_000,
): Promise<{ result?: unknown; error?: string }> {
  const auth = { authorization: `Bearer ${creds.kv.databases[0]?.token ?? ""}` };
  const res = await postFresh(creds.kv.url, auth, JSON.stringify(command), timeoutMs);
  return JSON.parse(res.body) as { result?: unknown; error?: string };
}

/** A queue API POST (publish, enqueue) on a connection of its own. */
function queuePost(creds: Creds, path: string, body: string, headers: Record<string, string> = {}) {
  const auth = { authorization: `Bearer ${creds.queue.token}`, ...headers };
  return postFresh(`${creds.queue.url}${path}`, auth, body, 10_000);
}

/** A publish to the receiver; its body when acknowledged (201), undefined otherwise. */
async function publish(creds: Creds, body: string): Promise<string | undefined> {
  try {
    const res = await queuePost(creds, `/v2/publish/${rx.url}/w`, body);
    if (res.status !== 201) return undefined;
    return (JSON.parse(res.body) as { messageId: string }).messageId;
  } catch {
    return undefined; // cut off by the kill: not acknowledged
  }
}

/** Each test starts (and some restart) a supervisor, 2 workers and 2 redis-servers. */
describe("stashd start with 2 workers", { timeout: 120_000 }, () => {
  it("replaces a SIGKILLed worker while the other keeps serving its in-flight requests", async () => {
    const creds = await startWorkers(newDataDir());
    const pid = supervisor().child.pid ?? 0;
    const before = workerPids(pid);
    expect(before).toHaveLength(2);
    // Blocked reads spread over both workers (one connection each, round-robin).
    const lists = ["l0", "l1", "l2", "l3"];
    const blocked = lists.map((l) => kv(creds, ["BLPOP", l, "20"]).catch(() => undefined));
    await eventually(async () => {
      const info = String((await kv(creds, ["INFO", "clients"])).result);
      expect(info).toMatch(/blocked_clients:4\r?\n/);
    });
    // The second worker (the first also runs the admin listener, whose /metrics is read below).
    const victim = before[1] ?? 0;
    process.kill(victim, "SIGKILL");

    // A connection node:cluster hands to the worker in the instant it dies is lost (the client
    // times out), as docs/operations.md says: these pushes retry like a client would.
    for (const l of lists) {
      await eventually(
        async () => expect((await kv(creds, ["RPUSH", l, `v-${l}`], 2_000)).result).toBe(1),
        {
          timeoutMs: 20_000,
        },
      );
    }
    const answers = await Promise.all(blocked);
    // The blocked reads of the surviving worker completed with their values.
    const completed = answers.filter((a) => a !== undefined);
    expect(completed.length).toBeGreaterThanOrEqual(1);
    for (const a of completed)
      expect(a.result).toEqual(expect.arrayContaining([expect.stringMatching(/^v-l\d$/)]));
    await eventually(
      async () => {
        const now = workerPids(pid);
        expect(now).toHaveLength(2);
        expect(now).not.toContain(victim);
        expect(await counter(creds.admin.url, "stashd_worker_restarts_total")).toBe(1);
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    expect((await kv(creds, ["PING"])).result).toBe("PONG");
  });

  it("adds up every worker's metrics on /metrics", async () => {
    const creds = await startWorkers(newDataDir());
    const requests = 20;
    for (let i = 0; i < requests; i++) expect((await kv(creds, ["INCR", "n"])).result).toBe(i + 1);
    const labels = { service: "kv", route: "INCR", status: "200" };
    expect(await counter(creds.admin.url, "stashd_http_requests_total", labels)).toBe(requests);
    expect(await counter(creds.admin.url, "stashd_workers")).toBe(2);
  });

  it("adds up every worker's counts on the console's charts, and names a worker that is silent", async () => {
    const dataDir = newDataDir();
    const creds = await startWorkers(dataDir);
    rx.requests.length = 0;
    // Known traffic, each request on a connection of its own (so both workers take a share):
    // 10 publishes delivered, 4 enqueued to a FIFO queue, 2 to a port nobody listens on
    // (1 retry each, then the DLQ); 3 pipelines of 100 commands and 7 commands on `default`,
    // 5 commands on a second database.
    for (let i = 0; i < 10; i++)
      expect((await queuePost(creds, `/v2/publish/${rx.url}/ok`, `p${i}`)).status).toBe(201);
    for (let i = 0; i < 4; i++)
      expect((await queuePost(creds, `/v2/enqueue/q1/${rx.url}/q`, `q${i}`)).status).toBe(201);
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const once = { "upstash-retries": "1" };
    for (let i = 0; i < 2; i++)
      expect((await queuePost(creds, `/v2/publish/${nobody}/x`, "f", once)).status).toBe(201);
    const incrs = JSON.stringify(Array.from({ length: 100 }, () => ["INCR", "n"]));
    const auth = { authorization: `Bearer ${creds.kv.databases[0]?.token ?? ""}` };
    for (let i = 0; i < 3; i++)
      expect((await postFresh(`${creds.kv.url}/pipeline`, auth, incrs, 10_000)).status).toBe(200);
    for (let i = 0; i < 7; i++) expect((await kv(creds, ["GET", "n"])).result).toBe("300");
    const cache = credentialsOf(createDatabase(dataDir, "cache"));
    // Until every worker serves the new database a request may be refused (not counted):
    // INCR until one answers 5, so exactly 5 commands ran there.
    await eventually(async () => {
      const res = await postFresh(
        creds.kv.url,
        { authorization: `Bearer ${cache.token}` },
        '["INCR","c"]',
        10_000,
      );
      expect((JSON.parse(res.body) as { result?: number }).result).toBe(5);
    });

    interface Charts {
      points: {
        published: number;
        delivered: number;
        failed: number;
        retried: number;
        latency: { count: number; buckets: number[] };
        byQueue: Record<string, { delivered: number }>;
        byHost: Record<string, { delivered: number; failed: number; retried: number }>;
        kvCommands: Record<string, number>;
      }[];
      workers: { counted: number; missing: { worker: number; pid: number; error: string }[] };
      databases: { name: string; keys: number | null }[];
    }
    const rxHost = new URL(rx.url).host;
    const deadHost = new URL(nobody).host;
    await eventually(
      async () => {
        const charts = (await consoleCall(creds, "charts")) as Charts;
        const sum = (f: (p: Charts["points"][number]) => number) =>
          charts.points.reduce((n, p) => n + f(p), 0);
        expect(charts.workers).toEqual({ counted: 2, missing: [] });
        expect({
          published: sum((p) => p.published),
          delivered: sum((p) => p.delivered),
          failed: sum((p) => p.failed),
          retried: sum((p) => p.retried),
          attempts: sum((p) => p.latency.count),
          histogram: sum((p) => p.latency.buckets.reduce((a, b) => a + b, 0)),
          q1: sum((p) => p.byQueue["q1"]?.delivered ?? 0),
          rx: sum((p) => p.byHost[rxHost]?.delivered ?? 0),
          deadFailed: sum((p) => p.byHost[deadHost]?.failed ?? 0),
          deadRetried: sum((p) => p.byHost[deadHost]?.retried ?? 0),
          kvDefault: sum((p) => p.kvCommands["default"] ?? 0),
          kvCache: sum((p) => p.kvCommands["cache"] ?? 0),
        }).toEqual({
          published: 16,
          delivered: 14,
          failed: 2,
          retried: 2,
          attempts: 18,
          histogram: 18,
          q1: 4,
          rx: 14,
          deadFailed: 2,
          deadRetried: 2,
          kvDefault: 307,
          kvCache: 5,
        });
        expect(charts.databases).toEqual(
          expect.arrayContaining([
            { name: "default", keys: 1 },
            { name: "cache", keys: 1 },
          ]),
        );
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );

    // The second worker stopped (SIGSTOP): named on the page with the reason, not counted as 0.
    const second = workerPids(supervisor().child.pid ?? 0)[1] ?? 0;
    process.kill(second, "SIGSTOP");
    try {
      const charts = (await consoleCall(creds, "charts")) as Charts;
      expect(charts.workers.counted).toBe(1);
      expect(charts.workers.missing).toEqual([
        { worker: 1, pid: second, error: expect.stringMatching(/no answer within 1000 ms/) },
      ]);
      // The Charts page names it.
      expect(await chartsPageWarning(creds)).toMatch(
        new RegExp(
          `^Worker 1 \\(pid ${second}\\) is left out of these counts \\(.*no answer within 1000 ms\\): they add up 1 of 2 workers\\.$`,
        ),
      );
    } finally {
      process.kill(second, "SIGCONT");
    }
    await eventually(async () =>
      expect(((await consoleCall(creds, "charts")) as Charts).workers.missing).toEqual([]),
    );
  });

  it("keeps a FIFO queue's order and deduplication across workers", async () => {
    const creds = await startWorkers(newDataDir());
    rx.requests.length = 0;
    rx.delayMs = 20;
    // Each enqueue and publish on its own connection: they alternate between the workers.
    for (let i = 0; i < 12; i++) {
      const res = await queuePost(creds, `/v2/enqueue/fifo/${rx.url}/fifo`, String(i));
      expect(res.status).toBe(201);
    }
    const dedup = { "upstash-deduplication-id": "once" };
    const answers = [];
    for (let i = 0; i < 6; i++)
      answers.push(await queuePost(creds, `/v2/publish/${rx.url}/dedup`, "d", dedup));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 202, 202, 202, 202, 202]);
    await eventually(() => expect(rx.requests.length).toBe(13), { timeoutMs: 15_000 });
    const fifo = rx.requests.filter((r) => r.url.endsWith("/fifo")).map((r) => Number(r.body));
    expect(fifo).toEqual(Array.from({ length: 12 }, (_, i) => i));
    expect(rx.requests.filter((r) => r.url.endsWith("/dedup"))).toHaveLength(1);
    rx.delayMs = 0;
  });

  it("drains every worker on SIGTERM: deliveries in flight are recorded, then all processes end", async () => {
    const dataDir = newDataDir();
    const creds = await startWorkers(dataDir);
    rx.requests.length = 0;
    rx.delayMs = 400;
    const ids = await Promise.all(
      Array.from({ length: 6 }, (_, i) => publish(creds, `drain-${i}`)),
    );
    await eventually(() => expect(rx.requests.length).toBe(6), { timeoutMs: 10_000 });
    const proc = supervisor();
    const exited = new Promise<number | null>((r) => proc.child.once("exit", (code) => r(code)));
    proc.child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(processesMentioning(dataDir)).toEqual([]);
    rx.delayMs = 0;
    // Started again: every attempt was recorded as delivered before the stop (none redelivered).
    const again = await startWorkers(dataDir);
    for (const id of ids) {
      const res = await fetch(`${again.queue.url}/v2/events?messageId=${id ?? ""}`, {
        headers: { authorization: `Bearer ${again.queue.token}` },
      });
      const states = ((await res.json()) as { events: { state: string }[] }).events.map(
        (e) => e.state,
      );
      expect(states).toContain("DELIVERED");
    }
    expect(rx.requests.length).toBe(6);
  });

  it("loses no acknowledged publish when the supervisor is SIGKILLed under load and restarted", async () => {
    const dataDir = newDataDir();
    const queuePort = await freePort();
    const creds = await startWorkers(dataDir, queuePort);
    rx.requests.length = 0;
    const acked: string[] = [];
    let publishing = true;
    const publishers = Array.from({ length: 8 }, async (_, p) => {
      for (let i = 0; publishing; i++) {
        const body = `p${p}-${i}`;
        if (await publish(creds, body)) acked.push(body);
      }
    });
    await eventually(() => expect(acked.length).toBeGreaterThan(50), { timeoutMs: 10_000 });
    supervisor().child.kill("SIGKILL");
    await new Promise((r) => setTimeout(r, 300));
    publishing = false;
    await Promise.all(publishers);
    // The orphaned workers drain and exit; then the same data dir starts again.
    // (`DIR ` matches the workers' command lines, not the redis-servers' socket paths.)
    await eventually(() => expect(processesMentioning(`${dataDir} `)).toEqual([]), {
      timeoutMs: 15_000,
    });
    await startWorkers(dataDir, queuePort);
    await eventually(
      () => {
        const delivered = new Set(rx.requests.map((r) => r.body));
        expect(acked.filter((b) => !delivered.has(b))).toEqual([]);
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
  });
});
