import type { Config } from "../../config/schema.js";
import { messageOf } from "../../shared/errors.js";
import type { Logger } from "../../shared/log.js";
import type { Dispatcher } from "../delivery/dispatcher.js";
import type { MessageStore } from "../store/message-store.js";
import type { ScheduleStore } from "../store/schedule-store.js";
import type { TopicStore } from "../store/topic-store.js";
import { fireSchedule } from "./fire.js";

/** Time as the scheduler sees it; tests pass a clock they advance by whole minutes. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** Due schedules fired per round; a full batch starts the next round at once. */
const BATCH = 100;
/** How long a fire's dedup claim is kept (it only has to outlive one fire). */
const CLAIM_MS = 60 * 60 * 1000;

export interface SchedulerDeps {
  schedules: ScheduleStore;
  messages: MessageStore;
  topics: TopicStore;
  dispatcher: Dispatcher;
  clock: Clock;
  cfg: Pick<Config, "queueSchedulePollMs">;
  log: Logger;
}

/**
 * The cron loop of one process. It does not poll tightly: it sleeps until the earliest next tick
 * of any schedule (the `sched-due` zset), at most `queueSchedulePollMs` (which is how it notices
 * schedules created by other processes), and is woken at once by local creates and resumes.
 * Every process runs one; each tick still fires exactly once (see fire.ts).
 */
export class Scheduler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  /** Set when a fire failed in this round: a full batch of failures is not retried at once. */
  private failed = false;

  constructor(private readonly deps: SchedulerDeps) {}

  now(): number {
    return this.deps.clock.now();
  }

  start(): void {
    this.wake();
  }

  /** Runs a round now, or right after the current one (a wake is never lost). */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.again = false;
    this.running = this.round().finally(() => {
      this.running = undefined;
      if (this.again) this.wake();
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private async round(): Promise<void> {
    let sleep = this.deps.cfg.queueSchedulePollMs;
    const start = this.now();
    try {
      this.failed = false;
      let full = true;
      while (full && !this.stopped) {
        // a full batch: more schedules may be due right now
        full = (await this.fireDue()) === BATCH && !this.failed;
      }
      // Ticks due since before this round and still there (a failing fire, or one another
      // process is completing) are retried next round; they do not set the sleep, so they
      // cannot make the loop spin.
      const earliest = await this.deps.schedules.earliest(start);
      if (earliest !== undefined) sleep = Math.min(sleep, Math.max(0, earliest - this.now()));
    } catch (err) {
      this.deps.log.warn("scheduler round failed", { err: messageOf(err) });
    }
    if (this.stopped) return;
    this.timer = setTimeout(() => this.wake(), sleep);
  }

  /** Fires every due schedule of one batch concurrently; returns how many were due. */
  private async fireDue(): Promise<number> {
    const { schedules, messages, topics, dispatcher, log } = this.deps;
    const now = this.now();
    const due = await schedules.due(now, BATCH);
    const fireDeps = { schedules, messages, topics, claimMs: CLAIM_MS };
    await Promise.all(
      due.map(async ({ id }) => {
        try {
          const s = await schedules.get(id);
          if (!s || s.paused || s.next > now) return; // changed meanwhile
          const result = await fireSchedule(fireDeps, s, now);
          if (result.dueAt !== undefined) dispatcher.wake(result.dueAt);
        } catch (err) {
          this.failed = true;
          log.warn("schedule fire failed", { id, err: messageOf(err) });
        }
      }),
    );
    return due.length;
  }
}
