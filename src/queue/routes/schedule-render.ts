import { TimeSlice } from "../../shared/time-slice.js";
import { bodyFields, flowControlFields, redactHeaders } from "../domain/render.js";
import type { StoredSchedule } from "../store/schedule-store.js";
import type { QueueContext } from "./context.js";

/** `lastScheduleStates` values (docs/qstash-protocol.md §7.4). */
const STATE_OF: Record<string, string> = {
  DELIVERED: "SUCCESS",
  FAILED: "FAIL",
  CANCELED: "FAIL",
};

/**
 * API shape of schedules (docs/qstash-protocol.md §7.5). Always present: scheduleId, cron,
 * destination, method, header, retries, delay and timeout (seconds), callback and failureCallback
 * ('' when unset), createdAt, lastScheduleTime and nextScheduleTime (ms, 0 when none),
 * lastScheduleStates, isPaused. `body` is omitted when empty (JS-T: a replacement without a body
 * has none).
 *
 * `lastScheduleStates` is live: a message of the last fire still stored is IN_PROGRESS; a
 * finished one is SUCCESS or FAIL as found among the newest log events (one bounded read for the
 * whole listing); one finished too long ago to be found there is left out.
 */
export async function renderSchedules(
  ctx: QueueContext,
  list: StoredSchedule[],
): Promise<Record<string, unknown>[]> {
  const ids = list.flatMap((s) => Object.keys(s.states));
  const live = new Set((await ctx.messages.getMany(ids)).map((m) => m.meta.messageId));
  const finished = await ctx.schedules.finalStates(new Set(ids.filter((id) => !live.has(id))));
  const out: Record<string, unknown>[] = [];
  const slice = new TimeSlice();
  for (const s of list) {
    await slice.pass();
    const states: Record<string, string> = {};
    for (const id of Object.keys(s.states)) {
      const state = live.has(id) ? "IN_PROGRESS" : STATE_OF[finished.get(id) ?? ""];
      if (state) states[id] = state;
    }
    out.push(render(s, states));
  }
  return out;
}

function render(s: StoredSchedule, states: Record<string, string>): Record<string, unknown> {
  const { def } = s;
  const o = def.options;
  const redact = o.redact;
  return {
    scheduleId: def.scheduleId,
    cron: def.cron,
    destination: def.destination,
    method: o.method,
    header: redactHeaders(o.header, redact),
    ...bodyFields(s.body, redact?.body ?? false),
    retries: o.maxRetries,
    delay: Math.round(def.delayMs / 1000),
    timeout: Math.round(o.timeoutMs / 1000),
    callback: o.callback ?? "",
    failureCallback: o.failureCallback ?? "",
    ...(o.callback ? { callbackHeader: redactHeaders(o.callbackHeader, redact) } : {}),
    ...(o.failureCallback
      ? { failureCallbackHeader: redactHeaders(o.failureCallbackHeader, redact) }
      : {}),
    ...(o.retryDelayExpression ? { retryDelayExpression: o.retryDelayExpression } : {}),
    ...(o.labels ? { label: o.labels[0], labels: o.labels } : {}),
    ...(def.callerIP ? { callerIP: def.callerIP, callerIp: def.callerIP } : {}),
    ...(def.queueName ? { queueName: def.queueName } : {}),
    ...flowControlFields(o.flowControl),
    createdAt: def.createdAt,
    lastScheduleTime: s.last,
    nextScheduleTime: s.paused ? 0 : s.next,
    lastScheduleStates: states,
    isPaused: s.paused,
    ...(s.error ? { error: s.error } : {}),
  };
}
