import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asArray, asText } from "../../src/queue/store/replies.js";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import { testPool } from "../harness/redis.js";
import { queueEnv, type QueueTestEnv } from "./setup.js";

/**
 * GET /v2/events by message id reads the message log index (`<p>msglog:<id>`, keys.ts), not the
 * stream: the cost of a message's events does not grow with the events other messages wrote
 * meanwhile. Checked by counting the XRANGE calls Redis ran (INFO commandstats): one per event of
 * the message, where the scan reads the stream in chunks. Without an index key (a message stored
 * before the index) the listing scans and returns the same events. Runs with one and with three
 * queue partitions (the "partitioned" vitest project).
 */
const OTHERS = 3000;
let env: QueueTestEnv;
let pool: RedisPool;
let first: string;
let second: string;
let createdAt: number;

type Event = { messageId: string; state: string; time: number };
type EventsPage = { events: Event[]; cursor?: string };

beforeAll(async () => {
  env = await queueEnv();
  pool = testPool(env.redis.url);
  createdAt = Date.now();
  // Delayed a long time: each message has one event (CREATED) until it is cancelled.
  // A fresh object each time: the SDK rewrites the body of what it is given.
  const later = () => ({ url: "http://127.0.0.1:9/later", body: "x", delay: 3600 });
  first = (await env.client.publishJSON(later())).messageId;
  second = (await env.client.publishJSON(later())).messageId;
  for (let i = 0; i < OTHERS; i += 100) {
    await env.client.batchJSON(Array.from({ length: 100 }, later));
  }
  await env.client.messages.delete(first);
  await env.client.messages.delete(second);
});
afterAll(async () => {
  await pool?.close();
  await env?.close();
});

async function events(query: string): Promise<EventsPage> {
  const res = await env.api(`/v2/events?${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as EventsPage;
}

/** XRANGE calls Redis ran since the last reset of its statistics. */
async function xrangeCalls(): Promise<number> {
  const info = await pool.exec(["INFO", "commandstats"]);
  const text = info.kind === "bulk" ? info.value.toString() : "";
  return Number(/cmdstat_xrange:calls=(\d+)/.exec(text)?.[1] ?? 0);
}

/** The events `query` lists and the XRANGE calls it took. */
async function measured(query: string): Promise<{ page: EventsPage; xranges: number }> {
  await pool.exec(["CONFIG", "RESETSTAT"]);
  const page = await events(query);
  return { page, xranges: await xrangeCalls() };
}

/** Every page of `query`, following the cursors. */
async function allPages(query: string): Promise<{ events: Event[]; pages: number }> {
  const out: Event[] = [];
  let pages = 0;
  let cursor: string | undefined;
  do {
    const page = await events(cursor ? `${query}&cursor=${cursor}` : query);
    out.push(...page.events);
    cursor = page.cursor;
    pages++;
  } while (cursor);
  return { events: out, pages };
}

/** The strings of an array reply of `command`. */
async function texts(...command: string[]): Promise<string[]> {
  return asArray(await pool.exec(command)).map((r) => asText(r) ?? "");
}

/** Deletes the log index keys of `id` in every partition (a message stored before the index). */
async function dropIndex(id: string): Promise<void> {
  const keys = await texts("KEYS", `*msglog:${id}`);
  expect(keys.length).toBeGreaterThan(0);
  for (const key of keys) await pool.exec(["DEL", key]);
}

const states = (list: Event[]) => list.map((e) => `${e.messageId}:${e.state}`);

describe("events by message id", () => {
  it("reads a message's events through its index, complete and in order", async () => {
    const { page, xranges } = await measured(`messageId=${first}&order=earliestFirst`);
    expect(states(page.events)).toEqual([
      `${first}:CREATED`,
      `${first}:CANCEL_REQUESTED`,
      `${first}:CANCELED`,
    ]);
    expect(page.cursor).toBeUndefined();
    // One XRANGE per event: none of the other messages' 3000 events was read.
    expect(xranges).toBe(3);
    const newest = await events(`messageId=${first}`);
    expect(states(newest.events)).toEqual([...states(page.events)].reverse());
  });

  it("answers the SDK's logs filter and a time cursor from the message's creation", async () => {
    const res = await env.client.logs({ filter: { messageId: second } });
    expect(res.logs.map((l) => l.state)).toEqual(["CANCELED", "CANCEL_REQUESTED", "CREATED"]);
    const since = await events(`messageId=${second}&order=earliestFirst&cursor=${createdAt - 1}`);
    expect(since.events.map((e) => e.state)).toEqual(["CREATED", "CANCEL_REQUESTED", "CANCELED"]);
    const future = await events(`messageId=${second}&order=earliestFirst&cursor=${Date.now() + 1}`);
    expect(future.events).toEqual([]);
  });

  it("pages several messages' events with cursors, as the scan lists them", async () => {
    const query = `messageIds=${first}&messageIds=${second}&order=earliestFirst`;
    const paged = await allPages(`${query}&count=2`);
    expect(paged.pages).toBe(3);
    expect(paged.events).toHaveLength(6);
    const whole = await events(`${query}&count=100`);
    expect(paged.events).toEqual(whole.events);
    // The same listing with the index keys gone is a scan of the stream: same events, same order.
    await dropIndex(first);
    const { page: scanned, xranges } = await measured(`${query}&count=100`);
    expect(scanned.events).toEqual(whole.events);
    expect(xranges).toBeGreaterThan(OTHERS / 200);
  });

  it("leaves out an indexed event the stream no longer holds (trimmed by retention)", async () => {
    const listed = await events(`messageId=${second}&order=earliestFirst`);
    expect(listed.events).toHaveLength(3);
    const created = listed.events[0];
    const [key = ""] = await texts("KEYS", `*msglog:${second}`);
    const [streamId = ""] = await texts("LRANGE", key, "0", "0");
    expect(created?.state).toBe("CREATED");
    await pool.exec(["XDEL", key.replace(/msglog:.*$/, "log"), streamId]);
    const after = await events(`messageId=${second}&order=earliestFirst&count=1`);
    expect(after.events.map((e) => e.state)).toEqual(["CANCEL_REQUESTED"]);
    const rest = await events(`messageId=${second}&order=earliestFirst&cursor=${after.cursor}`);
    expect(rest.events.map((e) => e.state)).toEqual(["CANCELED"]);
  });
});
