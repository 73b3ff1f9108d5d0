import type { Config } from "../../config/schema.js";
import { messageOf } from "../../shared/errors.js";
import type { Logger } from "../../shared/log.js";
import { metrics } from "../../shared/metrics.js";
import type { Dispatcher } from "../delivery/dispatcher.js";
import type { MessageStore } from "../store/message-store.js";
import type { QueueStore } from "../store/queue-store.js";
import type { ScheduleStore } from "../store/schedule-store.js";
import type { TopicStore } from "../store/topic-store.js";
import { fireSchedule } from "./fire.js";

/** Time as the scheduler sees it; tests pass a clock they advance by whole minutes. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/**
 * Due schedules claimed per batch; a full batch is followed by another at once. Large, because
 * the fires of a batch start together and the next batch waits for the whole batch: with 1,000
 * schedules on one minute, batches of 200 made the last fires wait for four batches before them.
 */
const BATCH = 1000;
/**
 * How long a claimed tick belongs to the claiming process: if it dies before advancing the
 * schedule, another process fires the tick after this (the fire's dedup key prevents a double).
 */
const FIRE_LEASE_MS = 30_000;
/** How long a fire's dedup claim is kept (it only has to outlive one fire). */
const CLAIM_MS = 60 * 60 * 1000;

export interface SchedulerDeps {
  schedules: ScheduleStore;
  messages: MessageStore;
  queues: QueueStore;
  topics: TopicStore;
  dispatcher: Dispatcher;
  clock: Clock;
  /** Its poll interval; produced messages are checked against it like publishes. */
  cfg: Config;
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
        full = (await this.fireDue()) && !this.failed;
      }
      // A claimed tick whose fire failed is due again after its lease; anything at or before
      // `start` still in the set must not set the sleep (the loop would spin on it).
      const lead = this.deps.cfg.queueScheduleLeadMs;
      const earliest = await this.deps.schedules.earliest(start + lead);
      if (earliest !== undefined) {
        sleep = Math.min(sleep, Math.max(0, earliest - lead - this.now()));
      }
    } catch (err) {
      this.deps.log.warn("scheduler round failed", { err: messageOf(err) });
    }
    if (this.stopped) return;
    this.timer = setTimeout(() => this.wake(), sleep);
  }

  /**
   * Claims a batch of schedules whose tick is due within the lead (STASHD_QUEUE_SCHEDULE_LEAD_MS),
   * a share from every partition, and fires them concurrently; true when more may be due at
   * once. A tick fired ahead stores its messages due at the tick, so building and storing them
   * is done when the tick comes.
   */
  private async fireDue(): Promise<boolean> {
    const { schedules, messages, queues, topics, dispatcher, cfg, log } = this.deps;
    const now = this.now();
    const wallOffset = Date.now() - now;
    const lead = cfg.queueScheduleLeadMs;
    const { ids, full } = await schedules.claim(now + lead, BATCH, FIRE_LEASE_MS);
    const fireDeps = { schedules, messages, queues, topics, dispatcher, config: cfg };
    const claimed = await schedules.getMany(ids);
    await Promise.all(
      claimed.map(async (s) => {
        if (s.paused || s.next > now + lead) return; // changed meanwhile
        try {
          // The dispatcher takes the messages (leased at once, or woken for their due time).
          await fireSchedule({ ...fireDeps, claimMs: CLAIM_MS }, s, now, wallOffset);
          metrics.scheduleTick(Math.max(0, now - s.next));
        } catch (err) {
          this.failed = true;
          log.warn("schedule fire failed", { id: s.def.scheduleId, err: messageOf(err) });
        }
      }),
    );
    return full;
  }
}
