import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { startOnOneRedis, type TestStashd } from "../harness/stashd.js";
import type { TestRedis } from "../harness/redis.js";
import { command } from "../kv/helpers.js";
import { startReceiver, type TestReceiver } from "../queue/receiver.js";

/**
 * No SEARCH.* or VECTOR.* request, from the public read-only token included, may hold stashd's
 * event loop (docs/search.md and docs/vector.md, "Limits and settings"; docs/decisions.md,
 * "Search and vector computing in slices"). While heavy read-only queries run side by side, a
 * plain GET still answers in a small fraction of one query's time, a queue publish is still
 * delivered, the queries answer what they answer alone, and queries past the scheduler's bounds
 * (STASHD_KV_COMPUTE_MAX_RUNNING + STASHD_KV_COMPUTE_MAX_WAITING) are refused at once.
 */
const MAX_RUNNING = 2;
const MAX_WAITING = 8;
const DOCS = 8_000;
const VECTORS = 12_000;
const DIM = 128;

let redis: TestRedis;
let s: TestStashd;
let rx: TestReceiver;

beforeAll(async () => {
  ({ redis, stashd: s } = await startOnOneRedis({
    kvComputeSliceMs: 2,
    kvComputeMaxRunning: MAX_RUNNING,
    kvComputeMaxWaiting: MAX_WAITING,
    kvComputeWallLimitMs: 60_000,
    searchQueryTimeLimitMs: 20_000,
    kvVectorQueryTimeoutMs: 20_000,
    queueIdlePollMs: 50,
  }));
  rx = await startReceiver(() => ({
    current: s.queue.currentSigningKey,
    next: s.queue.nextSigningKey,
  }));
}, 30_000);
afterAll(async () => {
  await rx?.close();
  await s?.stop();
  await redis?.stop();
});

const readOnly = () => ({ token: s.kv.readonlyToken });

/** Runs `work` while a read-only GET loops beside it; the worst GET round trip, in ms. */
async function worstGetDuring<T>(work: Promise<T>): Promise<{ result: T; worstGetMs: number }> {
  let done = false;
  let worst = 0;
  const probe = (async () => {
    while (!done) {
      const t = performance.now();
      const res = await command(s, ["GET", "plain"], readOnly());
      expect(res.status).toBe(200);
      worst = Math.max(worst, performance.now() - t);
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  try {
    return { result: await work, worstGetMs: worst };
  } finally {
    done = true;
    await probe;
  }
}

async function timed<T>(work: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const t = performance.now();
  const result = await work();
  return { result, ms: performance.now() - t };
}

/** The same heavy request `n` times at once; every reply. */
const together = (n: number, argv: unknown[]) =>
  Promise.all(Array.from({ length: n }, () => command(s, argv, readOnly())));

/** Publishes to the receiver; resolves once it has been delivered. */
async function publishedAndDelivered(body: string): Promise<void> {
  const res = await fetch(`${s.queue.url}/v2/publish/${rx.url}/`, {
    method: "POST",
    headers: { authorization: `Bearer ${s.queue.token}` },
    body,
  });
  expect(res.status).toBe(201);
  await eventually(() => expect(rx.requests.map((r) => r.body)).toContain(body), {
    timeoutMs: 10_000,
  });
}

/**
 * While the slots are taken by `occupy` requests (STASHD_KV_COMPUTE_MAX_RUNNING computing,
 * STASHD_KV_COMPUTE_MAX_WAITING waiting, a few more refused), `argv` is refused at once with
 * `busy`, as a single command (400) and as a /pipeline item; the admitted requests answer as
 * they do alone, and once the flood is over `argv` is answered again.
 */
async function expectBusyPastTheBounds(
  argv: unknown[],
  busy: string,
  occupy: unknown[],
): Promise<void> {
  const isBusy = (r: { body: unknown }) =>
    JSON.stringify(r.body) === JSON.stringify({ error: busy });
  const occupyAlone = await command(s, occupy, readOnly());
  const alone = await command(s, argv, readOnly());
  const searchBusy = (r: { body: unknown }) =>
    JSON.stringify(r.body) === JSON.stringify({ error: SEARCH_BUSY });
  await eventually(
    async () => {
      // The first refusal of the flood comes back at once: then every place is taken, and stays
      // so while the admitted occupiers compute (some 200 ms each, MAX_RUNNING at a time).
      let full: () => void = () => undefined;
      const placesFull = new Promise<void>((resolve) => (full = resolve));
      const flood = Promise.all(
        Array.from({ length: MAX_RUNNING + MAX_WAITING + 3 }, async () => {
          const reply = await command(s, occupy, readOnly());
          if (searchBusy(reply)) full();
          return reply;
        }),
      );
      await Promise.race([placesFull, flood]);
      const [single, res] = await Promise.all([
        command(s, argv, readOnly()),
        s.kvFetch("/pipeline", { body: JSON.stringify([argv]), token: s.kv.readonlyToken }),
      ]);
      const replies = await flood;
      expect(replies.filter(searchBusy).length).toBeGreaterThan(0);
      for (const reply of replies) {
        if (searchBusy(reply)) expect(reply.status).toBe(400);
        else expect(reply).toEqual(occupyAlone);
      }
      expect(single).toEqual({ status: 400, body: { error: busy } });
      expect(await res.json()).toEqual([{ error: busy }]);
    },
    { timeoutMs: 15_000, intervalMs: 0 },
  );
  expect(isBusy(alone)).toBe(false);
  expect(await command(s, argv, readOnly())).toEqual(alone);
}

const SEARCH_BUSY = "ERR search is busy, try again";
const WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split(" ");
/** A fuzzy prefix match: a scan of the whole dictionary. */
const fuzzyPrefix = (value: string) => ({
  body: { $fuzzy: { value, distance: 2, prefix: true } },
});
/** A query of some 200 ms that holds a place while others ask for one. */
const occupier = [
  "SEARCH.COUNT",
  "docs",
  JSON.stringify({ $or: WORDS.flatMap((w) => [fuzzyPrefix(`${w}3`), fuzzyPrefix(`${w}5`)]) }),
];
let seed = 11;
const rand = (n: number): number => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return Math.floor((seed / 2147483648) * n);
};
const sentence = (): string =>
  Array.from({ length: 12 }, () => `${WORDS[rand(WORDS.length)]}${rand(1000)}`).join(" ");

describe("SEARCH computing in slices", () => {
  // Fuzzy prefix matches scan the whole dictionary (12 000 terms) for each of 48 words.
  const heavy = JSON.stringify({
    $or: WORDS.flatMap((w) => ["12", "7", "45", "9"].map((n) => fuzzyPrefix(`${w}${n}`))),
  });
  const count = ["SEARCH.COUNT", "docs", heavy];
  const medium = JSON.stringify({ $or: WORDS.slice(0, 3).map((w) => fuzzyPrefix(`${w}12`)) });

  beforeAll(async () => {
    await command(s, ["SET", "plain", "p"]);
    const pipeline = Array.from({ length: DOCS }, (_, i) => [
      "HSET",
      `doc:${i}`,
      "body",
      sentence(),
      "n",
      String((i * 37) % 1000),
    ]);
    const res = await s.kvFetch("/pipeline", { body: JSON.stringify(pipeline) });
    expect(res.status).toBe(200);
    const schema = ["SCHEMA", "body", "TEXT", "n", "U64", "FAST"];
    await command(s, ["SEARCH.CREATE", "docs", "ON", "HASH", "PREFIX", "1", "doc:", ...schema]);
    expect((await command(s, ["SEARCH.WAITINDEXING", "docs"])).body).toEqual({ result: 1 });
  }, 30_000);

  it("keeps a GET fast and a queue delivery going while heavy queries run", async () => {
    const alone = await timed(() => command(s, count, readOnly()));
    expect(alone.result.body).toEqual({ result: expect.any(Number) });
    const { result, worstGetMs } = await worstGetDuring(
      Promise.all([together(6, count), publishedAndDelivered("during the queries")]),
    );
    const [replies] = result;
    for (const reply of replies) expect(reply).toEqual(alone.result);
    console.log(
      `[search-event-loop] one query ${alone.ms.toFixed(0)} ms; worst GET beside 6: ${worstGetMs.toFixed(0)} ms`,
    );
    // Unsliced, the 6 queries arrive together and run back to back: a GET sent meanwhile waits
    // for most of 6 x one query (before the slices: 2,005 ms beside one). A quarter of one query
    // was too tight where a query takes only 0.4 s and the whole slow tier loads the machine
    // (CI: 178 ms against 105); half the back-to-back time, capped at 250 ms, still tells.
    expect(worstGetMs).toBeLessThan(Math.min(250, Math.max(100, (alone.ms * 6) / 2)));
  }, 30_000);

  it("answers SEARCH.QUERY pages and aggregations as without load", async () => {
    const query = [
      "SEARCH.QUERY",
      "docs",
      medium,
      "LIMIT",
      "20",
      "HIGHLIGHT",
      "FIELDS",
      "1",
      "body",
    ];
    const ordered = ["SEARCH.QUERY", "docs", medium, "NOCONTENT", "ORDERBY", "n", "DESC"];
    const spec = {
      avg: { $avg: { field: "n" } },
      top: { $terms: { field: "n", size: 3, $aggs: { p: { $percentiles: { field: "n" } } } } },
      hist: { $histogram: { field: "n", interval: 100 } },
    };
    const aggregate = ["SEARCH.AGGREGATE", "docs", medium, JSON.stringify(spec)];
    const alone: { status: number; body: unknown }[] = [];
    for (const argv of [query, ordered, aggregate]) {
      const reply = await command(s, argv, readOnly());
      expect(reply.status).toBe(200);
      alone.push(reply);
    }
    const loaded = await Promise.all([
      together(3, query),
      together(3, ordered),
      together(3, aggregate),
      together(2, count),
    ]);
    loaded.slice(0, 3).forEach((replies, i) => {
      for (const reply of replies) expect(reply).toEqual(alone[i]);
    });
  }, 30_000);

  it("refuses queries past the running and waiting bounds at once", async () => {
    await expectBusyPastTheBounds(["SEARCH.COUNT", "docs", medium], SEARCH_BUSY, occupier);
  }, 30_000);
});

describe("VECTOR.QUERY exact scans in slices", () => {
  const vector = (i: number): string =>
    Buffer.from(
      Float32Array.from({ length: DIM }, (_, j) => Math.sin(i * 7.1 + j * 3.3)).buffer,
    ).toString("base64");
  const exact = [
    "VECTOR.QUERY",
    "vecs",
    "TOPK",
    "10",
    "PROFILE",
    "PRECISE",
    "BASE64-FP32",
    vector(-1),
  ];

  beforeAll(async () => {
    await command(s, ["VECTOR.CREATE", "vecs", "DIM", String(DIM), "METRIC", "COSINE"]);
    for (let from = 0; from < VECTORS; from += 4_000) {
      const adds = Array.from({ length: 4_000 }, (_, i) => [
        "VECTOR.ADD",
        "vecs",
        `v${from + i}`,
        "BASE64-FP32",
        vector(from + i),
      ]);
      const res = await s.kvFetch("/pipeline", { body: JSON.stringify(adds) });
      expect(res.status).toBe(200);
    }
    // The first query loads the index into the process.
    expect((await command(s, exact, readOnly())).status).toBe(200);
  }, 30_000);

  it("keeps a GET fast while many exact scans run, and answers each as alone", async () => {
    const alone = await timed(() => command(s, exact, readOnly()));
    expect(alone.result.status).toBe(200);
    const { result: replies, worstGetMs } = await worstGetDuring(
      together(MAX_RUNNING + MAX_WAITING, exact),
    );
    for (const reply of replies) expect(reply).toEqual(alone.result);
    console.log(
      `[search-event-loop] one exact scan ${alone.ms.toFixed(0)} ms; worst GET beside ${replies.length}: ${worstGetMs.toFixed(0)} ms`,
    );
    // One scan is short (some 10 ms), so the bound is on their sum: run in one go, the scans
    // would hold the event loop for all of it; in slices a GET waits a few slices.
    expect(worstGetMs).toBeLessThan(Math.min(250, Math.max(100, (alone.ms * replies.length) / 2)));
  }, 30_000);

  it("refuses scans past the running and waiting bounds at once (shared with SEARCH)", async () => {
    await expectBusyPastTheBounds(exact, "ERR vector search is busy, try again", occupier);
  }, 30_000);
});
