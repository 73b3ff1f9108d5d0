import {
  emptyOutcomes,
  LATENCY_EDGES_MS,
  MAX_GROUPS,
  OTHER_GROUP,
  POINTS,
  type CountPoint,
  type Outcomes,
  type StepSample,
} from "./chart-counts.js";

/**
 * GET /console/api/charts (docs/console.md, Charts): every process's count points (chart-counts.ts)
 * added up step by step, the percentiles computed from the summed duration histograms, with the
 * sample of the console's process. Under `stashd start` with several workers the first worker
 * gathers the others' points through the supervisor (src/cli/supervisor.ts); a worker that did
 * not answer in time is listed in `workers.missing`, never silently left out.
 */

/** A worker whose counts are not in the answer, and why. */
export interface MissingWorker {
  /** Its index (0 is the first worker), as in the supervisor's logs. */
  worker: number;
  pid: number | null;
  error: string;
}

/** Another worker's answer (src/cli/supervisor.ts). */
export interface WorkerCounts {
  worker: number;
  pid: number | null;
  points?: CountPoint[];
  error?: string;
}

/** The other workers' points, asked of the supervisor; undefined when this process is alone. */
export type GatherCounts = () => Promise<WorkerCounts[]>;

export interface ChartPoint extends Outcomes {
  t: number;
  published: number;
  /** Attempt durations: the summed histogram and its p50/p90/p99 (bucket upper bounds, ms). */
  latency: {
    count: number;
    buckets: number[];
    p50: number | null;
    p90: number | null;
    p99: number | null;
  };
  backlog: StepSample["backlog"];
  byQueue: Record<string, Outcomes>;
  byHost: Record<string, Outcomes>;
  kvCommands: Record<string, number>;
  keys: StepSample["keys"];
}

export interface ChartsAnswer {
  stepMs: number;
  now: number;
  latencyEdgesMs: number[];
  points: ChartPoint[];
  /** Processes whose counts are in the points, and the workers whose counts are not. */
  workers: { counted: number; missing: MissingWorker[] };
  /** Each database's key count when the page asked (DBSIZE), null for one that did not answer. */
  databases: { name: string; keys: number | null }[];
}

/** The answer from this process's points, the other workers' answers and the key counts now. */
export function chartsAnswer(input: {
  stepMs: number;
  own: CountPoint[];
  others: WorkerCounts[];
  databases: ChartsAnswer["databases"];
}): ChartsAnswer {
  const answered = input.others.filter((w) => w.points !== undefined);
  const missing = input.others
    .filter((w) => w.points === undefined)
    .map((w) => ({ worker: w.worker, pid: w.pid, error: w.error ?? "no answer" }));
  const merged = mergePoints([input.own, ...answered.map((w) => w.points ?? [])]);
  return {
    stepMs: input.stepMs,
    now: Date.now(),
    latencyEdgesMs: LATENCY_EDGES_MS,
    points: merged.map(chartPoint),
    workers: { counted: 1 + answered.length, missing },
    databases: input.databases,
  };
}

/** Several processes' points summed per step end, the last POINTS steps, oldest first. */
export function mergePoints(rings: CountPoint[][]): CountPoint[] {
  const byEnd = new Map<number, CountPoint>();
  for (const ring of rings) {
    for (const p of ring) {
      const seen = byEnd.get(p.t);
      byEnd.set(p.t, seen ? addPoints(seen, p) : p);
    }
  }
  return [...byEnd.values()].sort((a, b) => a.t - b.t).slice(-POINTS);
}

function addPoints(a: CountPoint, b: CountPoint): CountPoint {
  const sample = a.sample ?? b.sample;
  return {
    t: a.t,
    published: a.published + b.published,
    delivered: a.delivered + b.delivered,
    failed: a.failed + b.failed,
    retried: a.retried + b.retried,
    buckets: a.buckets.map((n, i) => n + (b.buckets[i] ?? 0)),
    byQueue: capGroups(addGroups(a.byQueue, b.byQueue)),
    byHost: capGroups(addGroups(a.byHost, b.byHost)),
    kvCommands: addCounts(a.kvCommands, b.kvCommands),
    ...(sample ? { sample } : {}),
  };
}

function addGroups(
  a: Record<string, Outcomes>,
  b: Record<string, Outcomes>,
): Record<string, Outcomes> {
  const sum: Record<string, Outcomes> = {};
  for (const groups of [a, b]) {
    for (const [name, o] of Object.entries(groups)) addInto((sum[name] ??= emptyOutcomes()), o);
  }
  return sum;
}

/** The MAX_GROUPS busiest groups; the others (and an existing "(other)") summed as "(other)". */
function capGroups(groups: Record<string, Outcomes>): Record<string, Outcomes> {
  const named = Object.entries(groups).filter(([name]) => name !== OTHER_GROUP);
  if (named.length <= MAX_GROUPS) return groups;
  const busiest = named.sort(([, x], [, y]) => total(y) - total(x));
  const other = { ...(groups[OTHER_GROUP] ?? emptyOutcomes()) };
  for (const [, o] of busiest.slice(MAX_GROUPS)) addInto(other, o);
  return { ...Object.fromEntries(busiest.slice(0, MAX_GROUPS)), [OTHER_GROUP]: other };
}

function addInto(sum: Outcomes, o: Outcomes): void {
  sum.delivered += o.delivered;
  sum.failed += o.failed;
  sum.retried += o.retried;
}

const total = (o: Outcomes): number => o.delivered + o.failed + o.retried;

function addCounts(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const sum = { ...a };
  for (const [name, n] of Object.entries(b)) sum[name] = (sum[name] ?? 0) + n;
  return sum;
}

function chartPoint({ buckets, sample, ...counts }: CountPoint): ChartPoint {
  return {
    ...counts,
    latency: { ...percentiles(buckets), buckets },
    backlog: sample?.backlog ?? null,
    keys: sample?.keys ?? {},
  };
}

/** p50/p90/p99 of a duration histogram, as the upper bound of the bucket each falls in. */
export function percentiles(buckets: number[]): Omit<ChartPoint["latency"], "buckets"> {
  const count = buckets.reduce((a, b) => a + b, 0);
  const at = (q: number): number | null => {
    if (count === 0) return null;
    let seen = 0;
    for (let i = 0; i < buckets.length; i++) {
      seen += buckets[i] ?? 0;
      if (seen >= q * count) return LATENCY_EDGES_MS[i] ?? null;
    }
    return null;
  };
  return { count, p50: at(0.5), p90: at(0.9), p99: at(0.99) };
}
