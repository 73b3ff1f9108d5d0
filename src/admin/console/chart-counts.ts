import { onDelivery, registry, type DeliveryOutcome } from "../../shared/metrics.js";
import type { QueueDepth } from "../../queue/store/depth.js";
import { withTimeout } from "../../shared/wait.js";

/**
 * One process's share of the console's charts (docs/console.md, Charts): what it did in each step
 * of STASHD_CONSOLE_CHART_STEP_MS, the last POINTS steps kept in memory and lost on restart.
 *
 * Steps end on multiples of the step length since the epoch, in every process alike, so the
 * points of several workers of `stashd start` line up by their end time `t` and add up
 * (charts.ts merges them; src/cli/supervisor.ts gathers them for the first worker, which runs the
 * console). A point holds only counts, which sum across processes: publish requests, delivered /
 * failed / retried attempts, a histogram of their durations (never percentiles, which do not
 * add), the same outcomes per queue and per destination host, and KV commands per database.
 * The process running the console also samples, at each step's end, what is read from Redis and
 * is already the whole server's: the backlog and each database's key count.
 */
export const POINTS = 60;
/** Distinct queues or hosts kept per point; the rest are counted as "(other)". */
export const MAX_GROUPS = 20;
export const OTHER_GROUP = "(other)";
/** Attempt-duration bucket upper bounds (ms); one more bucket holds everything slower. */
export const LATENCY_EDGES_MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000];
const PUBLISH_ROUTES = new Set(["POST publish **", "POST enqueue * **", "POST batch"]);
/** Longest the end-of-step sample (backlog, key counts) may take before it is left out. */
const SAMPLE_TIMEOUT_MS = 2_000;

export interface Outcomes {
  delivered: number;
  failed: number;
  retried: number;
}

/** What Redis says at a step's end (the console's process only); the whole server's. */
export interface StepSample {
  backlog: QueueDepth | null;
  /** DBSIZE per database, null for one that did not answer. */
  keys: Record<string, number | null>;
}

/** One step of one process (or, merged, of several): counts only, so points add up. */
export interface CountPoint extends Outcomes {
  /** End of the step (ms since the epoch, a multiple of the step length). */
  t: number;
  published: number;
  /** Attempts per duration bucket (LATENCY_EDGES_MS, then one for slower). */
  buckets: number[];
  byQueue: Record<string, Outcomes>;
  byHost: Record<string, Outcomes>;
  /** KV commands accepted per database (a pipeline of 100 is 100). */
  kvCommands: Record<string, number>;
  sample?: StepSample;
}

/** A KV database as the ring reads it: its name and its running command count. */
export interface CountedDatabase {
  readonly name: string;
  readonly commandsRun: number;
}

export interface CountSources {
  stepMs: number;
  /** The KV databases open now (their `commandsRun` only grows while a database is open). */
  databases: () => Iterable<CountedDatabase>;
  /** The end-of-step sample, in the process that runs the console. */
  sample?: (() => Promise<StepSample>) | undefined;
}

export function emptyOutcomes(): Outcomes {
  return { delivered: 0, failed: 0, retried: 0 };
}

/** The bucket a duration falls in. */
export function bucketOf(ms: number): number {
  const found = LATENCY_EDGES_MS.findIndex((edge) => ms <= edge);
  return found < 0 ? LATENCY_EDGES_MS.length : found;
}

/** The running step's tallies. */
class StepTally {
  outcomes = emptyOutcomes();
  buckets = new Array<number>(LATENCY_EDGES_MS.length + 1).fill(0);
  byQueue = new Map<string, Outcomes>();
  byHost = new Map<string, Outcomes>();

  add(outcome: DeliveryOutcome, queue: string | undefined, host: string, ms: number): void {
    const field = outcome === "retry" ? "retried" : outcome;
    this.outcomes[field]++;
    const i = bucketOf(ms);
    this.buckets[i] = (this.buckets[i] ?? 0) + 1;
    if (queue !== undefined) tally(this.byQueue, queue)[field]++;
    tally(this.byHost, host)[field]++;
  }
}

function tally(groups: Map<string, Outcomes>, name: string): Outcomes {
  const key = groups.has(name) || groups.size < MAX_GROUPS ? name : OTHER_GROUP;
  let t = groups.get(key);
  if (!t) groups.set(key, (t = emptyOutcomes()));
  return t;
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "(bad url)";
  }
}

/** The next step end after `now`: the next multiple of `stepMs`. */
export function nextStepEnd(now: number, stepMs: number): number {
  return (Math.floor(now / stepMs) + 1) * stepMs;
}

/**
 * The process's last POINTS steps. Each step is closed at its end (a timer set for the next
 * multiple of the step length); closing takes the step's tallies at once, then reads the
 * publish counter and, where configured, the sample, one close after the other.
 */
export class CountRing {
  private readonly points: CountPoint[] = [];
  private step = new StepTally();
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private lastPublished: number | undefined;
  /** Each open database's command count at the last step's end (keyed by the object). */
  private lastCommands = new Map<CountedDatabase, number>();
  private closing: Promise<void> = Promise.resolve();
  private closesRunning = 0;
  private running = false;

  constructor(private readonly sources: CountSources) {}

  get stepMs(): number {
    return this.sources.stepMs;
  }

  /** Starts counting (again a no-op); the first point covers the part of a step since now. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.unsubscribe = onDelivery((outcome, d) =>
      this.step.add(outcome, d.queueName, hostOf(d.url), d.durationMs),
    );
    this.lastCommands = this.commandCounts();
    void publishedSoFar().then((n) => (this.lastPublished ??= n));
    this.schedule();
  }

  stop(): void {
    this.running = false;
    clearTimeout(this.timer);
    this.unsubscribe?.();
  }

  /** The kept points, oldest first. */
  snapshot(): CountPoint[] {
    return [...this.points];
  }

  /**
   * Sets the timer for the next step end after `after` (a timer may fire a little before its
   * time by the wall clock: the step that just ended is never ended twice).
   */
  private schedule(after = 0): void {
    if (!this.running) return;
    const end = Math.max(nextStepEnd(Date.now(), this.stepMs), after + this.stepMs);
    this.timer = setTimeout(() => this.endStep(end), end - Date.now());
    this.timer.unref();
  }

  /**
   * Takes the step's tallies now; its point is added once the counter and sample are read, after
   * the points before it. A step that ends while an earlier one is still being added (a sample
   * slower than a step) is added without a sample, so the line of closes never grows.
   */
  private endStep(t: number): void {
    const step = this.step;
    this.step = new StepTally();
    const kvCommands = this.kvCommandDeltas();
    const sampled = this.closesRunning === 0;
    this.closesRunning++;
    this.closing = this.closing
      .then(() => this.addPoint(t, step, kvCommands, sampled))
      // A point that could not be added is left out; the next ones still are added.
      .catch(() => undefined)
      .finally(() => this.closesRunning--);
    this.schedule(t);
  }

  private async addPoint(
    t: number,
    step: StepTally,
    kvCommands: Record<string, number>,
    sampled: boolean,
  ): Promise<void> {
    const sampling = this.sources.sample;
    const [published, sample] = await Promise.all([
      publishedSoFar(),
      sampling && sampled
        ? withTimeout(sampling(), SAMPLE_TIMEOUT_MS).catch(() => undefined)
        : undefined,
    ]);
    const last = this.lastPublished ?? published;
    this.lastPublished = published;
    this.points.push({
      t,
      published: published - last,
      ...step.outcomes,
      buckets: step.buckets,
      byQueue: Object.fromEntries(step.byQueue),
      byHost: Object.fromEntries(step.byHost),
      kvCommands,
      ...(sampling ? { sample: sample ?? { backlog: null, keys: {} } } : {}),
    });
    if (this.points.length > POINTS) this.points.shift();
  }

  /** Commands per database since the last step's end; a database opened since counts from 0. */
  private kvCommandDeltas(): Record<string, number> {
    const now = this.commandCounts();
    const deltas: Record<string, number> = {};
    for (const [db, count] of now) {
      deltas[db.name] = (deltas[db.name] ?? 0) + count - (this.lastCommands.get(db) ?? 0);
    }
    this.lastCommands = now;
    return deltas;
  }

  private commandCounts(): Map<CountedDatabase, number> {
    const counts = new Map<CountedDatabase, number>();
    for (const db of this.sources.databases()) counts.set(db, db.commandsRun);
    return counts;
  }
}

/** Publish requests this process answered 2xx (publish, enqueue, batch: a batch counts once). */
async function publishedSoFar(): Promise<number> {
  const metric = registry.getSingleMetric("stashd_http_requests_total");
  const values = metric ? (await metric.get()).values : [];
  let published = 0;
  for (const v of values) {
    const { route, status } = v.labels;
    if (PUBLISH_ROUTES.has(String(route)) && String(status).startsWith("2")) published += v.value;
  }
  return published;
}
