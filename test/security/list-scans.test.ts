import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { QUEUE_PREFIX } from "../../src/queue/store/keys.js";
import { eventually } from "../harness/eventually.js";
import { testPool } from "../harness/redis.js";
import { queueEnv, received, type QueueTestEnv } from "../queue/setup.js";

/**
 * A filtered listing that matches nothing used to read the whole log (or DLQ) in one request:
 * 300 000 events took 4-7 s of the process and its Redis per `GET /v2/logs?state=NOPE`. A page now
 * ends after STASHD_QUEUE_PAGE_MAX_SCANNED entries examined, with a cursor (the page may be
 * empty), and following the cursors still finds every match.
 */
const MAX_SCANNED = 50;
let env: QueueTestEnv;
beforeAll(async () => {
  env = await queueEnv({ queuePageMaxScanned: MAX_SCANNED });
});
afterAll(() => env.close());

/** Copies the log's first event `n` times (same message, same state). */
const COPY_EVENTS = `local e = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
for i = 1, tonumber(ARGV[1]) do redis.call('XADD', KEYS[1], '*', unpack(e[2])) end
return redis.call('XLEN', KEYS[1])`;

type Listing = Record<string, unknown[]> & { cursor?: string };

/** Follows the cursors of `path` (a query included) to the end: the pages and every item. */
async function allPages(path: string, key: string): Promise<{ pages: number; items: unknown[] }> {
  const items: unknown[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const res = await env.api(`${path}${cursor === undefined ? "" : `&cursor=${cursor}`}`);
    expect(res.status).toBe(200);
    const page = (await res.json()) as Listing;
    expect(page[key]?.length ?? 0).toBeLessThanOrEqual(MAX_SCANNED);
    items.push(...(page[key] ?? []));
    cursor = page.cursor;
    pages++;
  } while (cursor !== undefined);
  return { pages, items };
}

describe("a page reads a bounded number of entries", () => {
  it("logs: a filter matching nothing answers an empty page with a cursor, not a full scan", async () => {
    const rx = await env.receiver();
    await env.api(`/v2/publish/${rx.url}/seed`, { method: "POST", body: "a" });
    await received(rx, 0);
    const pool = testPool(env.redis.url);
    await pool.exec(["EVAL", COPY_EVENTS, "1", `${QUEUE_PREFIX}log`, "500"]);
    const first = (await (await env.api("/v2/logs?count=1000000&state=NOPE")).json()) as Listing;
    expect(first.logs).toEqual([]);
    expect(first.cursor).toBeDefined();
    const none = await allPages("/v2/logs?count=1000000&state=NOPE", "logs");
    expect(none.items).toEqual([]);
    expect(none.pages).toBeGreaterThanOrEqual(500 / MAX_SCANNED);
    const delivered = await allPages("/v2/logs?count=1000000&state=DELIVERED", "logs");
    expect(delivered.items.length).toBeGreaterThan(0);
    const all = await allPages("/v2/logs?count=1000000", "logs");
    const xlen = await pool.exec(["XLEN", `${QUEUE_PREFIX}log`]);
    expect(xlen.kind === "int" && all.items.length === Number(xlen.value)).toBe(true);
  });

  it("dlq: a filter matching nothing pages through with cursors; every entry is still found", async () => {
    const n = 3 * MAX_SCANNED;
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        env.client.publish({ url: `http://127.0.0.1:9/dead/${i}`, body: "x", retries: 0 }),
      ),
    );
    await eventually(
      async () => {
        expect((await allPages("/v2/dlq?count=1000", "messages")).items).toHaveLength(n);
      },
      { timeoutMs: 20_000 },
    );
    const first = (await (await env.api("/v2/dlq?count=1000&url=http://nope")).json()) as Listing;
    expect(first.messages ?? []).toEqual([]);
    expect(first.cursor).toBeDefined();
    const none = await allPages("/v2/dlq?count=1000&url=http://nope", "messages");
    expect(none.items).toEqual([]);
    expect(none.pages).toBeGreaterThanOrEqual(n / MAX_SCANNED);
  });
});
