import { AppError } from "./errors.js";

export interface SlotGateOptions {
  /** Holders at once. */
  slots: number;
  /** Callers waiting for a slot at once; past it `enter` fails at once (429). */
  queue: number;
  /** Longest wait for a slot; past it `enter` fails (503). */
  waitMs: number;
  /** What the slots stand for, in error messages, e.g. "exclusive Redis connections of database x". */
  what: string;
  /** Start of error messages (`ERR ` on the KV gateway, as Redis words errors). */
  errorPrefix?: string;
}

/** Gives the slot back; calling it again does nothing. */
export type LeaveSlot = () => void;

/**
 * A counting semaphore with a bounded, first-come first-served wait queue and a bounded wait:
 * whatever it guards (connections, streams) never exceeds `slots`, callers beyond that wait in
 * order, and a flood past `queue` waiters, or a wait past `waitMs`, fails with a clear error and
 * `Retry-After` instead of piling up. Waiters cost one closure and one timer each.
 */
export class SlotGate {
  private inUse = 0;
  private readonly waiters: { grant: (leave: LeaveSlot) => void }[] = [];

  constructor(private readonly opts: SlotGateOptions) {}

  get held(): number {
    return this.inUse;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  /** A slot now, or undefined when all are taken (never waits). */
  tryEnter(): LeaveSlot | undefined {
    if (this.inUse >= this.opts.slots) return undefined;
    this.inUse++;
    return this.leaveOnce();
  }

  /**
   * A slot, waiting in line for one when all are taken. Throws a 429 when `queue` callers wait
   * already, a 503 when none frees within `waitMs`; both say when to retry.
   */
  enter(): Promise<LeaveSlot> {
    const now = this.tryEnter();
    if (now) return Promise.resolve(now);
    const { queue, waitMs, what, errorPrefix = "" } = this.opts;
    if (this.waiters.length >= queue) {
      return Promise.reject(
        new AppError(
          "too_many_requests",
          `${errorPrefix}too many requests waiting for ${what} (${this.opts.slots} in use, ${queue} waiting); retry later`,
          { headers: { "retry-after": "1" } },
        ),
      );
    }
    return new Promise<LeaveSlot>((resolve, reject) => {
      const waiter = {
        grant: (leave: LeaveSlot): void => {
          clearTimeout(timer);
          resolve(leave);
        },
      };
      const timer = setTimeout(() => {
        const at = this.waiters.indexOf(waiter);
        if (at !== -1) this.waiters.splice(at, 1);
        reject(
          new AppError(
            "server_busy",
            `${errorPrefix}waited ${waitMs} ms for ${what}, none became free; retry later`,
            { headers: { "retry-after": String(Math.max(1, Math.ceil(waitMs / 1000))) } },
          ),
        );
      }, waitMs);
      this.waiters.push(waiter);
    });
  }

  /** The leave function of a slot just taken: hands the slot to the next waiter, or frees it. */
  private leaveOnce(): LeaveSlot {
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const next = this.waiters.shift();
      if (next) next.grant(this.leaveOnce());
      else this.inUse--;
    };
  }
}
