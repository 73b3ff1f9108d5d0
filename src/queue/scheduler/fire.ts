import { isAppError } from "../../shared/errors.js";
import { produce, type ProduceDeps } from "../produce/produce.js";
import type { ScheduleStore, StoredSchedule } from "../store/schedule-store.js";
import { cachedCron } from "./cron.js";

/**
 * With a `dispatcher`, a tick's messages due now are leased to this process as they are stored
 * (the local hand-off of produce.ts), saving a claim; without one the caller wakes its dispatcher.
 */
export interface FireDeps extends ProduceDeps {
  schedules: ScheduleStore;
  /** How long a fire's claim (its dedup key) is kept; far longer than a fire takes. */
  claimMs: number;
}

/** What one fire did; `dueAt` is set when messages were stored by this call. */
export interface FireResult {
  advanced: boolean;
  dueAt?: number | undefined;
}

/**
 * Fires the tick `s.next` of a schedule, exactly once across processes:
 *
 * 1. the tick's messages are stored by the ordinary enqueue script under the dedup key
 *    `schedule:<id>:<tick>`, so of several processes firing the same tick only the first stores
 *    them (the others get the first one's message ids back);
 * 2. scheduleAdvance moves `next` on, only if it still equals the tick (compare-and-set).
 *
 * A process dying between the two leaves the tick due; whoever fires it next finds the dedup key
 * and only advances. Catch-up: a tick missed while no process ran fires once, when a process runs
 * again, as the latest missed tick; the next tick is the first one after `now` (missed ticks are
 * not replayed one by one).
 *
 * A schedule replaced or deleted while its due tick is being fired may still produce that tick
 * with the configuration it had when the tick came due (the advance then fails harmlessly).
 *
 * `now` is the scheduler's clock (ticks); messages are stamped with wall-clock time, which is the
 * same outside tests: `wallOffsetMs` is the wall clock minus the scheduler's clock, read at the
 * same instant as `now` (about 0 outside tests). A tick fired ahead (the scheduler's lead) is due
 * at the tick itself on the wall clock, however long claiming and storing took.
 */
export async function fireSchedule(
  deps: FireDeps,
  s: StoredSchedule,
  now: number,
  wallOffsetMs: number,
): Promise<FireResult> {
  const { def } = s;
  const cron = cachedCron(def.cron);
  const tick = s.next;
  const { fired, error, dueAt } = await produceTick(deps, s, tick, tick + wallOffsetMs);
  const states = Object.fromEntries(fired.map((id) => [id, "IN_PROGRESS"]));
  const advanced = await deps.schedules.advance(def.scheduleId, tick, {
    last: Math.max(tick, cron.latest(now) ?? tick),
    next: cron.next(Math.max(now, tick)) ?? Number.MAX_SAFE_INTEGER,
    states,
    error,
  });
  return { advanced, dueAt };
}

/**
 * Produces the tick's messages: one per target (a URL, or each endpoint of the URL group as it
 * is now; the group's default headers were taken at create), into the schedule's queue if it
 * has one. A missing group or a queue that may not be created (max queues, 412) is the fire's
 * `error`: the tick is spent, not retried every round. `fired` are the tick's message ids (the
 * first fire's when another process stored them); `dueAt` is set when this call stored them.
 */
async function produceTick(
  deps: FireDeps,
  s: StoredSchedule,
  tick: number,
  wallTick: number,
): Promise<{ fired: string[]; error?: string | undefined; dueAt?: number | undefined }> {
  const { def } = s;
  try {
    const result = await produce(deps, {
      to: def.group === undefined ? { url: def.destination } : { group: def.group },
      options: (created) => {
        // A tick fired ahead (the scheduler's lead) is due at the tick (on the wall clock), not
        // before; one fired late is due now.
        const dueAt = Math.max(created, wallTick) + def.delayMs;
        return { ...def.options, dueAt, notBefore: dueAt, contentBasedDedup: false };
      },
      body: s.body,
      callerIP: def.callerIP,
      queue: def.queueName,
      scheduleId: def.scheduleId,
      dedup: { key: `schedule:${def.scheduleId}:${tick}`, windowMs: deps.claimMs },
      destinationsChecked: true,
    });
    const fired = result.messages.map((m) => m.messageId);
    return { fired, dueAt: result.stored && fired.length > 0 ? result.dueAt : undefined };
  } catch (err) {
    if (isAppError(err) && err.code === "not_found") {
      return { fired: [], error: `url group not found: ${def.group ?? ""}` };
    }
    if (isAppError(err) && err.code === "precondition_failed") {
      return { fired: [], error: err.message };
    }
    throw err;
  }
}
