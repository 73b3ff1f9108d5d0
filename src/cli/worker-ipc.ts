import type { MetricObjectWithValues, MetricValue } from "prom-client";
import type { CountPoint } from "../admin/console/chart-counts.js";
import type { WorkerCounts } from "../admin/console/charts.js";
import type { ConfigOverrides } from "../config/load.js";
import { AppError } from "../shared/errors.js";
import type { HostedRedisOptions } from "../shared/redis/managed.js";
import type { RedisEndpoint } from "../shared/redis/connection.js";

/**
 * The messages between the supervisor of `stashd start` and its workers (node:cluster's IPC
 * channel, JSON). Requests carry an `id`; the answer carries the same `id` (see `Pending`).
 */

/** One registry's metrics as prom-client's getMetricsAsJSON() returns them. */
export type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];

/** Where a worker serves: the supervisor sends the fixed ports once the first worker bound them. */
export interface WorkerSetup {
  index: number;
  overrides: ConfigOverrides;
}

export interface WorkerUrls {
  kvUrl: string;
  queueUrl: string;
  adminUrl: string | undefined;
}

export type ToWorker =
  | { t: "setup"; setup: WorkerSetup }
  | { t: "hosted"; id: number; endpoint?: RedisEndpoint; pid?: number; error?: string }
  | { t: "collect"; id: number }
  | { t: "scraped"; id: number; text?: string; error?: string }
  /** Asks for the worker's chart points (src/admin/console/chart-counts.ts). */
  | { t: "count"; id: number }
  /** The other workers' chart points, for the first worker's Charts page. */
  | { t: "gathered"; id: number; workers: WorkerCounts[] }
  | { t: "stop" };

export type FromWorker =
  /** Its listener is in place (a message sent before would be lost): send the setup. */
  | { t: "hello" }
  | { t: "ready"; urls: WorkerUrls }
  | { t: "ensure"; id: number; opts: HostedRedisOptions }
  | { t: "release"; dir: string }
  | { t: "force-restart"; dir: string; pid?: number }
  | { t: "scrape"; id: number; listenerOnly: MetricsJson[] }
  | { t: "collected"; id: number; metrics: MetricsJson }
  /** The first worker asks for every other worker's chart points. */
  | { t: "gather"; id: number }
  | { t: "counted"; id: number; points: CountPoint[] };

/** Whether `value` is a message of this protocol (the channel may carry node:cluster's own). */
export function isProtocolMessage<T extends { t: string }>(value: unknown): value is T {
  return (
    typeof value === "object" && value !== null && typeof (value as { t?: unknown }).t === "string"
  );
}

/**
 * Requests waiting for their answer, each bounded by `timeoutMs` (a worker or supervisor that
 * died never answers: the caller gets an error instead of waiting forever).
 */
export class Pending<T> {
  private next = 1;
  private readonly waiting = new Map<
    number,
    { resolve: (v: T) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }
  >();

  constructor(
    private readonly timeoutMs: number,
    private readonly what: string,
  ) {}

  /** A new request id and the promise of its answer. */
  open(): { id: number; answer: Promise<T> } {
    const id = this.next++;
    const answer = new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(
          new AppError(
            "backend_unavailable",
            `${this.what}: no answer within ${this.timeoutMs} ms`,
          ),
        );
      }, this.timeoutMs);
      timer.unref();
      this.waiting.set(id, { resolve, reject, timer });
    });
    return { id, answer };
  }

  settle(id: number, value: T | Error): void {
    const w = this.waiting.get(id);
    if (!w) return;
    this.waiting.delete(id);
    clearTimeout(w.timer);
    if (value instanceof Error) w.reject(value);
    else w.resolve(value);
  }

  /** Fails every open request (the other side is gone). */
  failAll(reason: string): void {
    for (const id of [...this.waiting.keys()]) this.settle(id, new Error(reason));
  }
}
