import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
  type LabelValues,
} from "prom-client";
import { SeriesHistogram } from "./series-histogram.js";

/**
 * The process's event metrics (Prometheus, through prom-client). Code that sees an event calls one
 * of the small functions of `metrics` below; nothing else here needs to be passed around. Values
 * that live in Redis (queue depth, DLQ size) are not tracked here but read when scraped (see
 * src/admin/queue-gauges.ts). Served by the admin listener at /metrics; the names and what they
 * mean are listed in docs/operations.md, Metrics.
 *
 * One registry per process: several stashd instances started in one process (tests) add up.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Counter increments kept here by series and handed to prom-client when the metrics are read
 * (the counters' `collect`): prom-client builds and hashes the label set on every `inc`, which
 * cost about 1 µs per request on the KV gateway's hot path (docs/decisions.md, "KV fast lane").
 * A series' count is kept once made (series are bounded by their label values, see instrument.ts).
 */
class PendingCounts {
  private readonly series = new Map<string, { labels: LabelValues<string>; n: number }>();

  /** Counts one for the series `key`; false when there is none yet (then `start` it). */
  add(key: string): boolean {
    const entry = this.series.get(key);
    if (entry === undefined) return false;
    entry.n++;
    return true;
  }

  /** A new series with its labels, counting one. */
  start(key: string, labels: LabelValues<string>): void {
    this.series.set(key, { labels, n: 1 });
  }

  /** Adds what is pending to `counter`. */
  flush(counter: Counter): void {
    for (const entry of this.series.values()) {
      if (entry.n === 0) continue;
      counter.inc(entry.labels, entry.n);
      entry.n = 0;
    }
  }
}

const requestCounts = new PendingCounts();
const httpRequests: Counter = new Counter({
  name: "stashd_http_requests_total",
  help: "HTTP requests answered, by service, route (queue) or command (KV), and status.",
  labelNames: ["service", "route", "status"],
  registers: [registry],
  collect: (): void => requestCounts.flush(httpRequests),
});
const httpDuration = new SeriesHistogram(
  "stashd_http_request_duration_seconds",
  "Time from a request's arrival to its response's end, by service and route or command.",
  LATENCY_BUCKETS,
  registry,
);
const backendErrors = new Counter({
  name: "stashd_backend_errors_total",
  help: "Requests answered 5xx (a Redis unreachable or failing, or a bug), by service.",
  labelNames: ["service"],
  registers: [registry],
});
const sseOpen = new Gauge({
  name: "stashd_sse_streams_open",
  help: "Server-sent event streams (subscribe, psubscribe, monitor) open now.",
  registers: [registry],
});
const connectionsOpen = new Gauge({
  name: "stashd_http_connections_open",
  help: "Client connections open now on this process's listeners (KV, queue, admin), counted against STASHD_MAX_CONNECTIONS.",
  registers: [registry],
});
const connectionsShed = new Counter({
  name: "stashd_http_connections_shed_total",
  help: "Client connections closed because STASHD_MAX_CONNECTIONS was reached (the oldest that no token vouched for).",
  registers: [registry],
});
const computeAbandoned = new Counter({
  name: "stashd_kv_compute_abandoned_total",
  help: "SEARCH.* and VECTOR.* queries ended because their client went away, by where they were (waiting, running).",
  labelNames: ["stage"],
  registers: [registry],
});
const computePlaces = new Gauge({
  name: "stashd_kv_compute_queries",
  help: "SEARCH.* and VECTOR.* queries holding a place on the compute scheduler now, by state (running, waiting).",
  labelNames: ["state"],
  registers: [registry],
});
const deliveries = new Counter({
  name: "stashd_queue_deliveries_total",
  help: "Delivery attempts recorded, by outcome: delivered, retry (will be retried), failed (to the DLQ).",
  labelNames: ["outcome"],
  registers: [registry],
});
const retries = new Counter({
  name: "stashd_queue_retries_total",
  help: "Failed attempts that were scheduled for another try.",
  registers: [registry],
});
const attemptsStarted = new Counter({
  name: "stashd_queue_attempts_started_total",
  help: "Delivery attempts started, by how the message was leased: claimed from the due set, or handed_off (leased to this process when it was stored, no claim).",
  labelNames: ["how"],
  registers: [registry],
});
const leaseReaps = new Counter({
  name: "stashd_queue_lease_reaps_total",
  help: "Messages whose delivery lease expired and were returned to the ready set.",
  registers: [registry],
});
const scheduleTicks = new Counter({
  name: "stashd_queue_schedule_ticks_total",
  help: "Cron schedule ticks fired by this process.",
  registers: [registry],
});
const scheduleLateness = new Histogram({
  name: "stashd_queue_schedule_lateness_seconds",
  help: "How long after its due time a schedule tick fired.",
  buckets: [0.01, 0.05, 0.1, 0.5, 1, 2, 5, 15, 60, 300],
  registers: [registry],
});
const managedRestarts = new Counter({
  name: "stashd_managed_redis_restarts_total",
  help: "Restarts of a managed redis-server after it exited (a crash, or SHUTDOWN NOSAVE of an unkillable script), by server.",
  labelNames: ["server"],
  registers: [registry],
});
const kvScriptKills = new Counter({
  name: "stashd_kv_script_kills_total",
  help: "Scripts or functions killed (SCRIPT/FUNCTION KILL), by database and reason: `time` (past the time limit) or `memory` (past the memory bound).",
  labelNames: ["db", "reason"],
  registers: [registry],
});
const kvScriptShutdowns = new Counter({
  name: "stashd_kv_script_shutdowns_total",
  help: "Redis servers stopped (SHUTDOWN NOSAVE, or SIGKILL of a managed one) because a script that wrote could not be killed, by database and reason: `time` or `memory`.",
  labelNames: ["db", "reason"],
  registers: [registry],
});

const workersLive = new Gauge({
  name: "stashd_workers",
  help: "Worker processes serving now under `stashd start` (STASHD_WORKERS); 0 when one process serves alone.",
  registers: [registry],
  aggregator: "max",
});
const workerRestarts = new Counter({
  name: "stashd_worker_restarts_total",
  help: "Worker processes that exited unasked and were replaced by the supervisor.",
  registers: [registry],
});
const attemptDuration = new Histogram({
  name: "stashd_queue_attempt_duration_seconds",
  help: "Time from a delivery attempt's request to its recorded outcome (destination latency plus the Redis write).",
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export type DeliveryOutcome = "delivered" | "retry" | "failed";

/** What the console's charts group deliveries by (src/admin/console/charts.ts). */
export interface DeliveryDetail {
  queueName: string | undefined;
  url: string;
  durationMs: number;
}

const laneCounts = new PendingCounts();
const kvFastLane: Counter = new Counter({
  name: "stashd_kv_fast_lane_total",
  help: "KV requests answered by the fast lane, and connections it handed to node:http.",
  labelNames: ["outcome"],
  registers: [registry],
  collect: (): void => laneCounts.flush(kvFastLane),
});
const queueLaneCounts = new PendingCounts();
const queueFastLane: Counter = new Counter({
  name: "stashd_queue_fast_lane_total",
  help: "Queue publishes and enqueues answered by the fast lane, and connections it handed to node:http.",
  labelNames: ["outcome"],
  registers: [registry],
  collect: (): void => queueLaneCounts.flush(queueFastLane),
});

/** One outcome of a fast lane (shared/http/lane.ts), on its service's counter. */
function laneOutcome(service: "kv" | "queue", outcome: "answered" | "handed_over"): void {
  const counts = service === "kv" ? laneCounts : queueLaneCounts;
  if (!counts.add(outcome)) counts.start(outcome, { outcome });
}

type DeliveryListener = (outcome: DeliveryOutcome, detail: DeliveryDetail) => void;
const deliveryListeners = new Set<DeliveryListener>();

/**
 * Calls `fn` for every recorded delivery attempt of this process; answers the unsubscribe. The
 * console's per-minute charts count per queue and destination host with it, in memory, without
 * adding Prometheus label values (which would grow a series per host).
 */
export function onDelivery(fn: DeliveryListener): () => void {
  deliveryListeners.add(fn);
  return () => void deliveryListeners.delete(fn);
}

/** The hooks other modules call. Each is one counter or gauge update. */
export const metrics = {
  httpRequest(service: string, route: string, status: number, seconds: number): void {
    const key = `${service}\n${route}\n${status}`;
    if (!requestCounts.add(key))
      requestCounts.start(key, { service, route, status: String(status) });
    httpDuration.observe(`${service}\n${route}`, () => ({ service, route }), seconds);
    if (status >= 500) backendErrors.inc({ service });
  },
  /** A request a fast lane answered (shared/http/lane.ts). */
  laneAnswered(service: "kv" | "queue"): void {
    laneOutcome(service, "answered");
  },
  /** A connection a fast lane gave to node:http. */
  laneHandedOver(service: "kv" | "queue"): void {
    laneOutcome(service, "handed_over");
  },
  connectionOpened(): void {
    connectionsOpen.inc();
  },
  connectionClosed(): void {
    connectionsOpen.dec();
  },
  connectionShed(): void {
    connectionsShed.inc();
  },
  sseOpened(): void {
    sseOpen.inc();
  },
  sseClosed(): void {
    sseOpen.dec();
  },
  /** Queries taking (1) or leaving (-1) a running or waiting place (kv/search/scheduler.ts). */
  computePlaces(state: "running" | "waiting", change: 1 | -1): void {
    computePlaces.inc({ state }, change);
  },
  /** A query whose client went away left the compute scheduler (kv/search/scheduler.ts). */
  computeAbandoned(stage: "waiting" | "running"): void {
    computeAbandoned.inc({ stage });
  },
  delivery(outcome: DeliveryOutcome, detail?: DeliveryDetail): void {
    deliveries.inc({ outcome });
    if (outcome === "retry") retries.inc();
    if (!detail) return;
    attemptDuration.observe(detail.durationMs / 1000);
    for (const listener of deliveryListeners) listener(outcome, detail);
  },
  attemptStarted(how: "claimed" | "handed_off"): void {
    attemptsStarted.inc({ how });
  },
  leasesReaped(count: number): void {
    if (count > 0) leaseReaps.inc(count);
  },
  scheduleTick(latenessMs: number): void {
    scheduleTicks.inc();
    scheduleLateness.observe(Math.max(0, latenessMs) / 1000);
  },
  managedRedisRestart(server: string): void {
    managedRestarts.inc({ server });
  },
  kvScriptKilled(db: string, reason: "time" | "memory"): void {
    kvScriptKills.inc({ db, reason });
  },
  kvScriptShutdown(db: string, reason: "time" | "memory"): void {
    kvScriptShutdowns.inc({ db, reason });
  },
  workers(live: number): void {
    workersLive.set(live);
  },
  workerRestarted(): void {
    workerRestarts.inc();
  },
};
