import { isAppError } from "../../shared/errors.js";
import { buildMeta, type Target } from "../domain/build.js";
import type { MessageStore, NewMessage } from "../store/message-store.js";
import type { QueueStore } from "../store/queue-store.js";
import type { ScheduleStore, StoredSchedule } from "../store/schedule-store.js";
import type { TopicStore } from "../store/topic-store.js";
import { cachedCron } from "./cron.js";

export interface FireDeps {
  schedules: ScheduleStore;
  messages: MessageStore;
  /** For schedules with `Upstash-Queue-Name`: their messages are enqueued into that queue. */
  queues: QueueStore;
  topics: TopicStore;
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
 * same outside tests.
 */
export async function fireSchedule(
  deps: FireDeps,
  s: StoredSchedule,
  now: number,
): Promise<FireResult> {
  const { def } = s;
  const cron = cachedCron(def.cron);
  const tick = s.next;
  const produced = await produce(deps, s);
  const { messages } = produced;
  let error = produced.error;
  const created = Date.now();
  const ids = messages.map((m) => m.meta.messageId);
  let stored = false;
  let fired = ids;
  if (messages.length > 0) {
    const key = `schedule:${def.scheduleId}:${tick}`;
    const dedup = { key, windowMs: deps.claimMs, response: JSON.stringify(ids) };
    const result = await store(deps, def.queueName, created, messages, dedup);
    stored = result.stored;
    if (result.error !== undefined) [fired, error] = [[], result.error];
    else if (!result.stored) fired = JSON.parse(result.response ?? "[]") as string[];
  }
  const states = Object.fromEntries(fired.map((id) => [id, "IN_PROGRESS"]));
  const advanced = await deps.schedules.advance(def.scheduleId, tick, {
    last: Math.max(tick, cron.latest(now) ?? tick),
    next: cron.next(Math.max(now, tick)) ?? Number.MAX_SAFE_INTEGER,
    states,
    error,
  });
  return { advanced, dueAt: stored ? messages[0]?.dueAt : undefined };
}

/**
 * Stores a tick's messages, into the schedule's queue if it has one. A queue that may not be
 * created (max queues, 412) is the fire's `error`: the tick is spent, not retried every round.
 */
async function store(
  deps: FireDeps,
  queueName: string | undefined,
  created: number,
  messages: NewMessage[],
  dedup: { key: string; windowMs: number; response: string },
): Promise<{ stored: boolean; response?: string; error?: string }> {
  if (queueName === undefined) return deps.messages.enqueue(created, messages, dedup);
  try {
    return await deps.queues.enqueue(created, queueName, messages, dedup);
  } catch (err) {
    if (isAppError(err) && err.code === "precondition_failed") {
      return { stored: false, error: err.message };
    }
    throw err;
  }
}

/** The tick's messages: one per target (a URL, or each endpoint of the URL group as it is now). */
async function produce(
  deps: FireDeps,
  s: StoredSchedule,
): Promise<{ messages: NewMessage[]; error?: string | undefined }> {
  const { def } = s;
  let targets: Target[] = [{ url: def.destination }];
  if (def.group !== undefined) {
    const group = await deps.topics.get(def.group);
    if (!group) return { messages: [], error: `url group not found: ${def.group}` };
    targets = group.endpoints.map((e) => ({
      url: e.url,
      topicName: group.name,
      endpointName: e.name,
    }));
  }
  const created = Date.now();
  const dueAt = created + def.delayMs;
  const opts = {
    ...def.options,
    dueAt,
    notBefore: dueAt,
    contentBasedDedup: false,
  };
  const messages = targets.map((t) => ({
    meta: {
      ...buildMeta(opts, t, created, def.callerIP),
      scheduleId: def.scheduleId,
      queueName: def.queueName,
    },
    body: s.body,
    dueAt,
  }));
  return { messages };
}
