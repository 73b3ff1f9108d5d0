import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { startOnOneRedis, type TestStashd } from "../harness/stashd.js";
import type { TestRedis } from "../harness/redis.js";
import { command } from "../kv/helpers.js";
import { counter } from "../ops/helpers.js";

/**
 * A SEARCH.* query whose client hangs up gives its place on the compute scheduler back
 * (docs/search.md, "Computing in slices"): a stranger with the public read-only token cannot fill
 * the STASHD_KV_COMPUTE_MAX_RUNNING + _MAX_WAITING places with heavy queries and walk away. The
 * limits here (a 60 s wall limit, a 30 s time limit) would keep such queries in their places for
 * the whole file without that; the queries stop within a few slices once their clients abort.
 */
/** Small places; limits that would keep abandoned queries in them for the whole file. */
const LIMITS = {
  kvComputeSliceMs: 2,
  kvComputeMaxRunning: 2,
  kvComputeMaxWaiting: 2,
  kvComputeWallLimitMs: 60_000,
  searchQueryTimeLimitMs: 30_000,
};
const { kvComputeMaxRunning: MAX_RUNNING, kvComputeMaxWaiting: MAX_WAITING } = LIMITS;
const DOCS = 2_000;
const ABANDONED = "stashd_kv_compute_abandoned_total";

let redis: TestRedis;
let s: TestStashd;

beforeAll(async () => {
  ({ redis, stashd: s } = await startOnOneRedis(LIMITS));
  const words = "alpha beta gamma delta epsilon zeta".split(" ");
  // Some 6000 distinct terms: a fuzzy prefix match scans all of them for each word it names.
  const pipeline = Array.from({ length: DOCS }, (_, i) => [
    "HSET",
    `doc:${i}`,
    "body",
    words.map((w, j) => `${w}${(i * 7 + j * 131) % 1000}`).join(" "),
  ]);
  expect((await s.kvFetch("/pipeline", { body: JSON.stringify(pipeline) })).status).toBe(200);
  await command(s, "SEARCH.CREATE docs ON HASH PREFIX 1 doc: SCHEMA body TEXT".split(" "));
  expect((await command(s, ["SEARCH.WAITINDEXING", "docs"])).body).toEqual({ result: 1 });
}, 30_000);
afterAll(async () => {
  await s?.stop();
  await redis?.stop();
});

const readOnly = () => ({ token: s.kv.readonlyToken });
/** Thousands of fuzzy prefix scans of the dictionary: far longer than this test may wait. */
const heavy = [
  "SEARCH.COUNT",
  "docs",
  JSON.stringify({
    $or: Array.from({ length: 5_000 }, (_, i) => ({
      body: { $fuzzy: { value: `alpha${i % 1000}`, distance: 2, prefix: true } },
    })),
  }),
];
const light = ["SEARCH.COUNT", "docs", JSON.stringify({ body: "alpha7" })];
const BUSY = { status: 400, body: { error: "ERR search is busy, try again" } };

const abandonedSoFar = async () => ({
  running: await counter(s.admin?.url ?? "", ABANDONED, { stage: "running" }),
  waiting: await counter(s.admin?.url ?? "", ABANDONED, { stage: "waiting" }),
});

/** Queries holding a place now, by state (the gauge stashd_kv_compute_queries). */
const places = async () => ({
  running: await counter(s.admin?.url ?? "", "stashd_kv_compute_queries", { state: "running" }),
  waiting: await counter(s.admin?.url ?? "", "stashd_kv_compute_queries", { state: "waiting" }),
});

/** Sends `path` with `body` from a client that can hang up; the request's settled promise. */
function abortable(path: string, body: unknown[]): { abort(): void; done: Promise<unknown> } {
  const client = new AbortController();
  const done = s
    .kvFetch(path, {
      body: JSON.stringify(body),
      token: s.kv.readonlyToken,
      signal: client.signal,
    })
    .then(
      (res) => res.status,
      (err: unknown) => err,
    );
  return { abort: () => client.abort(), done };
}

describe("a query whose client went away", () => {
  it("gives its running or waiting place back at once (single commands and /pipeline)", async () => {
    const before = await abandonedSoFar();
    // Every place taken: two compute, two wait; half of them asked in a /pipeline.
    const occupiers = [
      abortable("/", heavy),
      abortable("/pipeline", [heavy]),
      abortable("/", heavy),
      abortable("/pipeline", [["GET", "x"], heavy]),
    ];
    await eventually(async () => expect(await places()).toEqual({ running: 2, waiting: 2 }), {
      timeoutMs: 10_000,
    });
    // One more is refused: every place is taken.
    expect(await command(s, light, readOnly())).toEqual(BUSY);
    const hungUp = performance.now();
    for (const o of occupiers) o.abort();
    // The places come back within a few slices, not at the limits (30 s, 60 s) the queries had.
    const answered = await eventually(
      async () => {
        const reply = await command(s, light, readOnly());
        expect(reply.status).toBe(200);
        return reply;
      },
      { timeoutMs: 5_000 },
    );
    const waitedMs = performance.now() - hungUp;
    expect(answered.body).toEqual({ result: expect.any(Number) });
    expect(waitedMs).toBeLessThan(5_000);
    for (const o of occupiers) expect(await o.done).toBeInstanceOf(Error);
    // All four stopped: the two computing at a slice boundary, the two waiting off the list.
    await eventually(async () => {
      const after = await abandonedSoFar();
      expect(after.running - before.running).toBe(MAX_RUNNING);
      expect(after.waiting - before.waiting).toBe(MAX_WAITING);
    });
    // Every place is free again: as many light queries at once as places, none refused.
    const together = await Promise.all(
      Array.from({ length: MAX_RUNNING + MAX_WAITING }, () => command(s, light, readOnly())),
    );
    for (const reply of together) expect(reply).toEqual(answered);
    await eventually(async () => expect(await places()).toEqual({ running: 0, waiting: 0 }));
  }, 30_000);
});
