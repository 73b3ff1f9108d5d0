import { afterAll, beforeAll, expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import { consoleEnv, type ConsoleEnv } from "./harness.js";
import { startDestination, type Destination } from "./queue-seed.js";

/** The queue views' console endpoints over plain HTTP (docs/console.md, Console API). */
let env: ConsoleEnv;
let dest: Destination;
let cookie: string;

beforeAll(async () => {
  env = await consoleEnv({ browser: false, start: { consoleChartStepMs: 25 } });
  dest = await startDestination();
  const res = await fetch(`${env.url}/api/login`, {
    method: "POST",
    headers: { "x-stashd-console": "1", "content-type": "application/json" },
    body: JSON.stringify({ token: env.q.stashd.queue.token }),
  });
  cookie = (res.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
});
afterAll(async () => {
  await dest?.close();
  await env?.close();
});

async function call<T>(path: string, status = 200): Promise<T> {
  const res = await fetch(`${env.url}/api/${path}`, { headers: { cookie } });
  const body = (await res.json()) as T;
  expect({ status: res.status, body }).toMatchObject({ status });
  return body;
}

interface Row {
  messageId: string;
  state: string;
  attempts: number;
  lastStatus?: number;
  dlqId?: string;
  nextDeliveryTime?: number;
}

test("messages: one row per message with its state now; its page has the attempts with their duration", async () => {
  const { messageId } = await env.q.client.publish({
    url: `${dest.url}/bin`,
    body: "x",
    retries: 0,
  });
  const row = await eventually(async () => {
    const { messages } = await call<{ messages: Row[] }>(`messages?messageId=${messageId}`);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ state: "FAILED", attempts: 1, lastStatus: 500 });
    return messages[0] as Row;
  });
  expect(row.dlqId).toMatch(/^\d+-\d+$/);
  const failed = await call<{ messages: Row[] }>("messages?state=FAILED");
  expect(failed.messages.map((m) => m.messageId)).toEqual([messageId]);
  const detail = await call<{ attempts: { durationMs: number; outcome: string }[]; stored: null }>(
    `messages/${messageId}`,
  );
  expect(detail.stored).toBeNull();
  expect(detail.attempts).toHaveLength(1);
  expect(detail.attempts[0]).toMatchObject({ outcome: "FAILED" });
  expect(detail.attempts[0]?.durationMs).toBeGreaterThanOrEqual(0);
});

test("messages: a bad state or filter is a 400 with the reason, an unknown id a 404", async () => {
  expect(await call("messages?state=SLEEPING", 400)).toEqual({ error: "unknown state: SLEEPING" });
  const bad = await call<{ error: string }>("messages?fromDate=yesterday", 400);
  expect(bad.error).toContain("fromDate");
  expect(await call("messages/msg_nope", 404)).toEqual({
    error: "no message msg_nope in the queue or the log",
  });
});

test("pending: every unfinished message counted once, by state and group", async () => {
  await env.q.client.publishJSON({ url: `${dest.url}/ok`, body: {}, delay: 600 });
  const now = await call<{ total: number; scanned: number; counts: Record<string, number> }>(
    "pending?state=delayed",
  );
  expect(now.total).toBe(1);
  expect(now.scanned).toBe(1);
  expect(now.counts).toEqual({
    ready: 0,
    delayed: 1,
    inFlight: 0,
    retrying: 0,
    waiting: 0,
    other: 0,
  });
  expect(await call("pending?state=sleeping", 400)).toEqual({
    error: "state must be one of ready, delayed, inFlight, retrying, waiting, other",
  });
});

test("the new endpoints need a session", async () => {
  for (const path of ["messages", "messages/msg_x", "pending", "pending/ids", "charts"]) {
    expect((await fetch(`${env.url}/api/${path}`)).status).toBe(401);
  }
});

interface ChartPoint {
  delivered: number;
  failed: number;
  byHost: Record<string, { delivered: number; failed: number }>;
  latency: { count: number; p50: number | null };
  backlog: { pending: number } | null;
}

test("charts: per-step points, at most 60, counting deliveries per destination host", async () => {
  await env.q.client.publish({ url: `${dest.url}/ok`, body: "c" });
  const host = new URL(dest.url).host;
  await eventually(async () => {
    const { points } = await call<{ points: ChartPoint[] }>("charts");
    const delivered = points.reduce((n, p) => n + (p.byHost[host]?.delivered ?? 0), 0);
    expect(delivered).toBeGreaterThan(0);
    expect(points.some((p) => p.latency.count > 0 && p.latency.p50 !== null)).toBe(true);
  });
  await eventually(async () => {
    const charts = await call<{
      points: ChartPoint[];
      stepMs: number;
      workers: { counted: number; missing: unknown[] };
    }>("charts");
    const { points, stepMs } = charts;
    expect(stepMs).toBe(25);
    // One process serves everything here: the counts are the whole server's.
    expect(charts.workers).toEqual({ counted: 1, missing: [] });
    expect(points).toHaveLength(60);
    expect(points.at(-1)?.backlog).not.toBeNull();
  });
});
