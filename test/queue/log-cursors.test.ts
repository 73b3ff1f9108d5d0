import type { Log } from "@upstash/qstash";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queueEnv, type QueueTestEnv } from "./setup.js";

/**
 * `client.logs()` paged the way its JSDoc shows: `let cursor = Date.now(); while (cursor > 0)
 * { … cursor = res.cursor ?? 0 }`. The first request sends a time in ms; every later one sends
 * back the cursor string, and the loop goes on only while that string compares above 0 as a
 * number (docs/qstash-protocol.md §2.9). Runs with one and with three queue partitions (the
 * "partitioned" vitest project).
 */
const MESSAGES = 250;
let env: QueueTestEnv;
let published: string[];
let before: number;

beforeAll(async () => {
  env = await queueEnv();
  before = Date.now();
  published = [];
  // Delayed a long time: each message has one event (CREATED) while the test runs.
  for (let i = 0; i < MESSAGES; i += 50) {
    const items = Array.from({ length: 50 }, (_, j) => ({
      url: `http://127.0.0.1:9/logs/${i + j}`,
      body: { n: i + j },
      delay: 3600,
    }));
    const res = await env.client.batchJSON(items);
    published.push(...res.map((r) => ("messageId" in r ? r.messageId : "")));
  }
});
afterAll(async () => {
  await env?.close();
});

type LogsPage = { logs: { messageId: string; time: number }[]; cursor?: string };

async function rawLogs(query: string): Promise<LogsPage> {
  const res = await env.api(`/v2/logs?${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as LogsPage;
}

describe("log cursors", () => {
  it("visits every entry exactly once with the SDK's documented loop", async () => {
    const logs: Log[] = [];
    let pages = 0;
    let cursor: number | string = Date.now();
    // As in the JSDoc: JavaScript compares the cursor string to 0 as a number.
    while ((cursor as number) > 0) {
      const res = await env.client.logs({ cursor });
      logs.push(...res.logs);
      pages++;
      cursor = res.cursor ?? 0;
    }
    expect(pages).toBeGreaterThan(2);
    expect(logs).toHaveLength(MESSAGES);
    expect(new Set(logs.map((l) => l.messageId))).toEqual(new Set(published));
    expect(logs.every((l) => l.state === "CREATED")).toBe(true);
  });

  it("hands out all-digit cursors and takes the earlier stream-id form too", async () => {
    const first = await rawLogs("count=10");
    expect(first.cursor).toMatch(/^\d{18,}$/);
    const next = await rawLogs(`count=10&cursor=${first.cursor}`);
    expect(next.logs[0]?.messageId).not.toBe(first.logs[9]?.messageId);
    const all = (await rawLogs("count=1000")).logs.map((l) => l.messageId);
    expect(next.logs.map((l) => l.messageId)).toEqual(all.slice(10, 20));
    const earliest = await rawLogs("count=1000&order=earliestFirst");
    expect(earliest.logs.map((l) => l.messageId)).toEqual([...all].reverse());
  });

  it("starts a listing at a time in ms, in both orders", async () => {
    expect((await rawLogs(`cursor=${before - 1}`)).logs).toHaveLength(0);
    expect(
      (await rawLogs(`cursor=${before - 1}&order=earliestFirst&count=1000`)).logs,
    ).toHaveLength(MESSAGES);
    expect((await rawLogs(`cursor=${Date.now()}&count=1000`)).logs).toHaveLength(MESSAGES);
    expect((await rawLogs("cursor=0&count=1000")).logs).toHaveLength(MESSAGES);
    const later = await rawLogs(`cursor=${Date.now() + 1000}&order=earliestFirst`);
    expect(later.logs).toHaveLength(0);
    expect(later.cursor).toBeUndefined();
  });

  it("refuses a cursor of no accepted form with 400", async () => {
    for (const bad of ["abc", "1-x", "12345678901234567", "-5"]) {
      const res = await env.api(`/v2/events?cursor=${bad}`);
      expect(res.status, bad).toBe(400);
      expect(((await res.json()) as { error: string }).error).toContain("invalid cursor");
    }
  });
});
