import { expect, test } from "vitest";
import {
  bucketOf,
  LATENCY_EDGES_MS,
  MAX_GROUPS,
  nextStepEnd,
  type CountPoint,
} from "../../src/admin/console/chart-counts.js";
import { chartsAnswer, mergePoints } from "../../src/admin/console/charts.js";

/**
 * How the Charts page adds up the workers of `stashd start` (src/admin/console/charts.ts): points
 * summed per step end, percentiles from the summed histograms, groups capped after the sum.
 */
function point(t: number, fill: Partial<CountPoint> = {}): CountPoint {
  return {
    t,
    published: 0,
    delivered: 0,
    failed: 0,
    retried: 0,
    buckets: new Array<number>(LATENCY_EDGES_MS.length + 1).fill(0),
    byQueue: {},
    byHost: {},
    kvCommands: {},
    ...fill,
  };
}

/** A histogram with `n` attempts of `ms` each. */
function durations(...pairs: [ms: number, n: number][]): number[] {
  const buckets = new Array<number>(LATENCY_EDGES_MS.length + 1).fill(0);
  for (const [ms, n] of pairs) buckets[bucketOf(ms)] = (buckets[bucketOf(ms)] ?? 0) + n;
  return buckets;
}

test("steps end on multiples of the step length, alike in every process", () => {
  expect(nextStepEnd(60_000 * 5 + 1, 60_000)).toBe(60_000 * 6);
  expect(nextStepEnd(60_000 * 6, 60_000)).toBe(60_000 * 7);
});

test("two workers' points add up per step; percentiles come from the summed histogram", () => {
  // Worker 0: 99 fast attempts. Worker 1: one of 10 s. Averaged p99s would say about 5 s.
  const a = [point(1000, { delivered: 99, buckets: durations([4, 99]), published: 3 })];
  const b = [
    point(1000, { delivered: 1, buckets: durations([9000, 1]), published: 2 }),
    point(2000, { failed: 1, buckets: durations([30, 1]) }),
  ];
  const answer = chartsAnswer({
    stepMs: 1000,
    own: a,
    others: [{ worker: 1, pid: 42, points: b }],
    databases: [],
  });
  expect(answer.workers).toEqual({ counted: 2, missing: [] });
  const [first, second] = answer.points;
  expect(first).toMatchObject({ t: 1000, delivered: 100, published: 5 });
  expect(first?.latency).toMatchObject({ count: 100, p50: 5, p90: 5, p99: 5 });
  expect(second).toMatchObject({ t: 2000, failed: 1, latency: { count: 1, p99: 50 } });
});

test("KV commands add up per database, and the console's sample is kept", () => {
  const backlog = { pending: 1, ready: 1, delayed: 0, inFlight: 0, dlq: 0, workflowDlq: 0 };
  const own = [point(1000, { kvCommands: { default: 100 }, sample: { backlog, keys: { a: 7 } } })];
  const other = [point(1000, { kvCommands: { default: 5, cache: 1 } })];
  const [merged] = mergePoints([own, other]);
  expect(merged?.kvCommands).toEqual({ default: 105, cache: 1 });
  expect(merged?.sample).toEqual({ backlog, keys: { a: 7 } });
});

test("a worker that did not answer is named, not counted as zero", () => {
  const answer = chartsAnswer({
    stepMs: 1000,
    own: [point(1000, { delivered: 2 })],
    others: [{ worker: 1, pid: 7, error: "worker chart counts: no answer within 2000 ms" }],
    databases: [{ name: "default", keys: 3 }],
  });
  expect(answer.workers).toEqual({
    counted: 1,
    missing: [{ worker: 1, pid: 7, error: "worker chart counts: no answer within 2000 ms" }],
  });
  expect(answer.points[0]?.delivered).toBe(2);
  expect(answer.databases).toEqual([{ name: "default", keys: 3 }]);
});

test("groups over the cap after the sum are folded into (other), keeping every count", () => {
  const hosts = (from: number) =>
    Object.fromEntries(
      Array.from({ length: MAX_GROUPS }, (_, i) => [
        `h${from + i}`,
        { delivered: from + i, failed: 0, retried: 0 },
      ]),
    );
  const [merged] = mergePoints([
    [point(1000, { byHost: hosts(0) })],
    [point(1000, { byHost: hosts(10) })],
  ]);
  const byHost = merged?.byHost ?? {};
  expect(Object.keys(byHost)).toHaveLength(MAX_GROUPS + 1);
  const sum = (r: Record<string, { delivered: number }>) =>
    Object.values(r).reduce((n, o) => n + o.delivered, 0);
  expect(sum(byHost)).toBe(sum(hosts(0)) + sum(hosts(10)));
  // The busiest names stay named.
  expect(byHost["h29"]?.delivered).toBe(29);
  expect(byHost["h15"]?.delivered).toBe(30);
});

test("at most 60 points, the newest", () => {
  const many = Array.from({ length: 70 }, (_, i) => point((i + 1) * 1000));
  const merged = mergePoints([many]);
  expect(merged).toHaveLength(60);
  expect(merged[0]?.t).toBe(11_000);
});
