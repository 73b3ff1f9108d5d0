import cluster from "node:cluster";
import { onDelivery, registry, type DeliveryOutcome } from "../../shared/metrics.js";
import type { QueueDepth } from "../../queue/store/depth.js";

/**
 * The console's charts (docs/console.md, Charts): one point per step (STASHD_CONSOLE_CHART_STEP_MS,
 * a minute by default), the last POINTS kept in memory, lost on restart. Each point holds what
 * happened during its step, from what stashd already measures:
 *
 * - publish requests: the delta of `stashd_http_requests_total` for the queue's publish, enqueue
 *   and batch routes answered 2xx (a batch counts once);
 * - delivered / failed / retried attempts, and their durations as a histogram (the p50/p90/p99
 *   shown are bucket upper bounds), counted by metrics.onDelivery, with per-queue and
 *   per-destination-host counts (at most MAX_GROUPS of each per point, the rest as "(other)");
 * - the backlog at the end of the step (readQueueDepth: five counting reads);
 * - KV requests per second (the delta of the KV service's `stashd_http_requests_total`: a
 *   pipeline or transaction counts once) and each database's DBSIZE at the end of the step.
 *
 * This process's metrics only: on a cluster of stashd processes each console charts its own, and
 * under `stashd start` with several workers (src/cli/supervisor.ts) the first worker, which runs
 * the console, counts its own share; the snapshot says so (`firstWorkerOnly`) and the page
 * tells the user. The backlog and the key counts are read from Redis, so they are the server's.
 */
export const POINTS = 60;
const MAX_GROUPS = 20;
/** Attempt-duration bucket upper bounds (ms); the last bucket is everything slower. */
export const LATENCY_EDGES_MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000];
const PUBLISH_ROUTES = new Set(["POST publish **", "POST enqueue * **", "POST batch"]);

interface Outcomes {
  delivered: number;
  failed: number;
  retried: number;
}

export interface ChartPoint {
  /** End of the step (ms). */
  t: number;
  published: number;
  delivered: number;
  failed: number;
  retried: number;
  /** Attempt durations: p50, p90, p99 (bucket upper bounds, ms; null past the last edge). */
  latency: { count: number; p50: number | null; p90: number | null; p99: number | null };
  backlog: QueueDepth | null;
  byQueue: Record<string, Outcomes>;
  byHost: Record<string, Outcomes>;
  kvRequestsPerSecond: number;
  keys: Record<string, number | null>;
}

export interface ChartSources {
  stepMs: number;
  depth: () => Promise<QueueDepth>;
  dbSizes: () => Promise<{ name: string; keys: number | null }[]>;
}

/** The running step's tallies. */
class Step {
  outcomes: Outcomes = { delivered: 0, failed: 0, retried: 0 };
  buckets = new Array<number>(LATENCY_EDGES_MS.length + 1).fill(0);
  byQueue = new Map<string, Outcomes>();
  byHost = new Map<string, Outcomes>();

  add(outcome: DeliveryOutcome, queue: string | undefined, host: string, ms: number): void {
    const field = outcome === "retry" ? "retried" : outcome;
    this.outcomes[field]++;
    const found = LATENCY_EDGES_MS.findIndex((edge) => ms <= edge);
    const i = found < 0 ? LATENCY_EDGES_MS.length : found;
    this.buckets[i] = (this.buckets[i] ?? 0) + 1;
    if (queue !== undefined) tally(this.byQueue, queue)[field]++;
    tally(this.byHost, host)[field]++;
  }
}

function tally(groups: Map<string, Outcomes>, name: string): Outcomes {
  const key = groups.has(name) || groups.size < MAX_GROUPS ? name : "(other)";
  let t = groups.get(key);
  if (!t) groups.set(key, (t = { delivered: 0, failed: 0, retried: 0 }));
  return t;
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "(bad url)";
  }
}

export class ChartRing {
  private readonly points: ChartPoint[] = [];
  private step = new Step();
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private lastPublished: number | undefined;
  private lastKv: number | undefined;

  constructor(private readonly sources: ChartSources) {}

  start(): void {
    this.unsubscribe = onDelivery((outcome, d) =>
      this.step.add(outcome, d.queueName, hostOf(d.url), d.durationMs),
    );
    void this.counters().then((c) => {
      this.lastPublished = c.published;
      this.lastKv = c.kv;
    });
    this.timer = setInterval(() => void this.close(), this.sources.stepMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.unsubscribe?.();
  }

  snapshot(): { stepMs: number; points: ChartPoint[]; now: number; firstWorkerOnly: boolean } {
    const firstWorkerOnly = cluster.isWorker;
    return {
      stepMs: this.sources.stepMs,
      points: [...this.points],
      now: Date.now(),
      firstWorkerOnly,
    };
  }

  /** Ends the running step: its point is added, the oldest dropped past POINTS. */
  private async close(): Promise<void> {
    const step = this.step;
    this.step = new Step();
    const [counters, backlog, sizes] = await Promise.all([
      this.counters(),
      this.sources.depth().catch(() => null),
      this.sources.dbSizes().catch(() => []),
    ]);
    const published = counters.published - (this.lastPublished ?? counters.published);
    const kv = counters.kv - (this.lastKv ?? counters.kv);
    this.lastPublished = counters.published;
    this.lastKv = counters.kv;
    this.points.push({
      t: Date.now(),
      published,
      ...step.outcomes,
      latency: percentiles(step.buckets),
      backlog,
      byQueue: Object.fromEntries(step.byQueue),
      byHost: Object.fromEntries(step.byHost),
      kvRequestsPerSecond: Math.round((kv / this.sources.stepMs) * 1000 * 10) / 10,
      keys: Object.fromEntries(sizes.map((s) => [s.name, s.keys])),
    });
    if (this.points.length > POINTS) this.points.shift();
  }

  /** The process's publish requests and KV requests so far (prom-client counters). */
  private async counters(): Promise<{ published: number; kv: number }> {
    const metric = registry.getSingleMetric("stashd_http_requests_total");
    const values = metric ? (await metric.get()).values : [];
    let published = 0;
    let kv = 0;
    for (const v of values) {
      const { service, route, status } = v.labels;
      if (service === "kv") kv += v.value;
      else if (PUBLISH_ROUTES.has(String(route)) && String(status).startsWith("2")) {
        published += v.value;
      }
    }
    return { published, kv };
  }
}

/** p50/p90/p99 as the upper bound of the bucket each falls in. */
function percentiles(buckets: number[]): ChartPoint["latency"] {
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
