import type { Config } from "../../config/schema.js";
import type { Interrupts } from "../../shared/http/interrupts.js";
import { metrics } from "../../shared/metrics.js";
import type { Deadline } from "./deadline.js";
import { SearchError } from "./errors.js";

/**
 * Where SEARCH.* and VECTOR.* compute (docs/decisions.md, "Search and vector computing in
 * slices"). Their work is written as generators that yield when their Deadline says the slice is
 * over; one scheduler per process (per Config) runs at most one slice per event-loop turn
 * (setImmediate, so the loop's I/O runs between any two slices), round-robin over the
 * computations in progress. So a request holds the event loop STASHD_KV_COMPUTE_SLICE_MS at a
 * time, however heavy it is and however many run.
 *
 * Queries take a lease first (`admit`): at most STASHD_KV_COMPUTE_MAX_RUNNING hold one, at most
 * STASHD_KV_COMPUTE_MAX_WAITING wait for one, and one more is refused at once (`Refused`, "busy").
 * A lease ends its query once STASHD_KV_COMPUTE_WALL_LIMIT_MS have passed since it was asked
 * for, waiting included. Indexing work (`background`) takes no lease: its amount is bounded by
 * the indexes, not by requests.
 *
 * A query whose client goes away (`Interrupts`: the request's socket closed before its reply was
 * written) is abandoned: waiting, it leaves the wait list at once; running, it stops at its next
 * slice boundary (within STASHD_KV_COMPUTE_SLICE_MS) and its lease's place goes to the next
 * waiter as soon as the caller releases it. Either way its promise rejects with `Abandoned`, which
 * the command answers as an error reply that nobody reads (the socket is gone).
 */
export type Steps<T> = Generator<void, T, void>;

export interface SchedulerSettings {
  readonly sliceMs: number;
  readonly maxRunning: number;
  readonly maxWaiting: number;
  readonly wallLimitMs: number;
}

/** A query refused (busy) or ended (past the wall-clock limit): answered as an error reply. */
export class Refused extends SearchError {}

/** A query ended because its client went away (or stashd is stopping): see `Interrupts`. */
export class Abandoned extends Refused {}

interface Job {
  readonly steps: Steps<unknown>;
  readonly deadline: Deadline;
  readonly lease: Lease | undefined;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

interface Waiter {
  readonly since: number;
  readonly what: string;
  readonly timer: NodeJS.Timeout;
  readonly client: ClientWatch;
  resolve(lease: Lease): void;
  reject(err: Error): void;
}

/**
 * Whether a query's client went away, from `admit` on: the reason once it did. Watching stops when
 * the lease is released (or the query leaves the wait list).
 */
class ClientWatch {
  gone: string | undefined;
  private readonly unwatch: () => void;

  constructor(interrupts: Interrupts | undefined, onGone: (watch: ClientWatch) => void) {
    this.unwatch =
      interrupts?.watch((why) => {
        this.gone = why;
        onGone(this);
      }) ?? noop;
  }

  stop(): void {
    this.unwatch();
  }
}

const noop = (): void => undefined;

/** One query's right to compute; `release` it when the query is answered. */
export class Lease {
  private released = false;
  readonly wallEnd: number;

  constructor(
    private readonly scheduler: SliceScheduler,
    readonly what: string,
    since: number,
    readonly client: ClientWatch,
  ) {
    this.wallEnd = since + scheduler.settings.wallLimitMs;
  }

  /** Runs `steps` a slice at a time; its result, or what it threw (or the wall limit's error). */
  run<T>(steps: Steps<T>, deadline: Deadline): Promise<T> {
    return this.scheduler.enqueue(steps, deadline, this);
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.client.stop();
    this.scheduler.leaseEnded();
  }
}

export class SliceScheduler {
  /** The computations in progress: the head runs next, then goes to the back. */
  private readonly jobs: Job[] = [];
  private readonly waiting: Waiter[] = [];
  private leases = 0;
  private turnPending = false;

  constructor(readonly settings: SchedulerSettings) {}

  /**
   * A lease now, or once one ends; `Refused` when the wait list is full or the wait too long,
   * `Abandoned` when `interrupts` end the query first (or had already: it takes no place then).
   */
  admit(what: string, interrupts?: Interrupts): Promise<Lease> {
    const since = performance.now();
    let waiter: Waiter | undefined;
    const client = new ClientWatch(interrupts, (watch) => {
      if (waiter !== undefined && this.leaveWaitList(waiter)) {
        metrics.computeAbandoned("waiting");
        waiter.reject(abandoned(what, watch));
      }
    });
    if (client.gone !== undefined) {
      client.stop();
      metrics.computeAbandoned("waiting");
      return Promise.reject(abandoned(what, client));
    }
    if (this.leases < this.settings.maxRunning) {
      this.leases++;
      metrics.computePlaces("running", 1);
      return Promise.resolve(new Lease(this, what, since, client));
    }
    if (this.waiting.length >= this.settings.maxWaiting) {
      client.stop();
      return Promise.reject(new Refused(`ERR ${what} is busy, try again`));
    }
    return new Promise<Lease>((resolve, reject) => {
      const timer = setTimeout(() => {
        if (waiter !== undefined) this.leaveWaitList(waiter);
        reject(this.tooLong(what));
      }, this.settings.wallLimitMs).unref();
      waiter = { since, what, resolve, reject, timer, client };
      this.waiting.push(waiter);
      metrics.computePlaces("waiting", 1);
    });
  }

  /** Takes `waiter` off the wait list (its timer and watch stopped); false when it was not on it. */
  private leaveWaitList(waiter: Waiter): boolean {
    const at = this.waiting.indexOf(waiter);
    if (at < 0) return false;
    this.waiting.splice(at, 1);
    metrics.computePlaces("waiting", -1);
    clearTimeout(waiter.timer);
    waiter.client.stop();
    return true;
  }

  /** Runs indexing work a slice at a time, beside the queries (no lease, never refused). */
  background<T>(steps: Steps<T>, deadline: Deadline): Promise<T> {
    return this.enqueue(steps, deadline, undefined);
  }

  enqueue<T>(steps: Steps<T>, deadline: Deadline, lease: Lease | undefined): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.jobs.push({ steps, deadline, lease, resolve: resolve as (v: unknown) => void, reject });
      this.schedule();
    });
  }

  leaseEnded(): void {
    const next = this.waiting.shift();
    if (next === undefined) {
      this.leases--;
      metrics.computePlaces("running", -1);
      return;
    }
    metrics.computePlaces("waiting", -1);
    clearTimeout(next.timer);
    next.resolve(new Lease(this, next.what, next.since, next.client));
  }

  private schedule(): void {
    if (this.turnPending || this.jobs.length === 0) return;
    this.turnPending = true;
    setImmediate(this.turn);
  }

  /** One slice of the computation at the head of the round, then the next turn is asked for. */
  private readonly turn = (): void => {
    this.turnPending = false;
    const job = this.jobs.shift();
    if (job !== undefined && this.slice(job)) this.jobs.push(job);
    this.schedule();
  };

  /** Runs one slice of `job`; true when it has more to do. */
  private slice(job: Job): boolean {
    const start = performance.now();
    const ended = job.lease && this.endOf(job.lease, start);
    if (ended !== undefined) {
      job.steps.return(undefined);
      job.reject(ended);
      return false;
    }
    job.deadline.beginSlice(start, this.settings.sliceMs);
    try {
      const step = job.steps.next();
      if (!step.done) return true;
      job.resolve(step.value);
    } catch (err) {
      job.reject(err);
    } finally {
      job.deadline.endSlice(performance.now());
    }
    return false;
  }

  /** Why a leased query stops before its next slice (client gone, past the wall limit), if so. */
  private endOf(lease: Lease, now: number): Refused | undefined {
    if (lease.client.gone !== undefined) {
      metrics.computeAbandoned("running");
      return abandoned(lease.what, lease.client);
    }
    return now > lease.wallEnd ? this.tooLong(lease.what) : undefined;
  }

  private tooLong(what: string): Refused {
    return new Refused(
      `ERR ${what} waited and ran longer than ${this.settings.wallLimitMs} ms (STASHD_KV_COMPUTE_WALL_LIMIT_MS): try again`,
    );
  }
}

function abandoned(what: string, client: ClientWatch): Abandoned {
  return new Abandoned(`ERR ${what} ended: ${client.gone ?? "the client went away"}`);
}

const schedulers = new WeakMap<Config, SliceScheduler>();

/** The process's scheduler (one per Config: tests run several stashd in one process). */
export function schedulerOf(config: Config): SliceScheduler {
  let scheduler = schedulers.get(config);
  if (scheduler === undefined) {
    scheduler = new SliceScheduler({
      sliceMs: config.kvComputeSliceMs,
      maxRunning: Math.max(1, config.kvComputeMaxRunning),
      maxWaiting: config.kvComputeMaxWaiting,
      wallLimitMs: config.kvComputeWallLimitMs,
    });
    schedulers.set(config, scheduler);
  }
  return scheduler;
}

/**
 * Runs `work` under a lease of `config`'s scheduler, released however it ends; `interrupts`
 * abandon it when its client goes away (see SliceScheduler).
 */
export async function withLease<T>(
  config: Config,
  what: string,
  work: (lease: Lease) => Promise<T>,
  interrupts?: Interrupts,
): Promise<T> {
  const lease = await schedulerOf(config).admit(what, interrupts);
  try {
    return await work(lease);
  } finally {
    lease.release();
  }
}

/** Runs `steps` to its end at once, holding the event loop (unit tests and benchmarks only). */
export function runToEnd<T>(steps: Steps<T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}
