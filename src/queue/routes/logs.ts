import { filterFromQuery, matches } from "../domain/filters.js";
import { redactHeaders } from "../domain/render.js";
import type { LogEvent } from "../store/log-store.js";
import type { Handler } from "./context.js";
import { parseLogCursor } from "../domain/log-cursor.js";
import { countParam, multi, reply } from "./util.js";

/**
 * GET /v2/events → `{events, cursor?}` and GET /v2/logs → `{logs, cursor?}`
 * (docs/qstash-protocol.md §2.9): newest first by default, `messageIds` or filters (state accepts
 * IN_PROGRESS and CANCELLED), cursor omitted on the last page. The time, messageId, state and url
 * fields are always present. Cursors: domain/log-cursor.ts (a time in ms starts the listing there).
 */
export const listLogs: Handler = async (ctx, r) => {
  const filter = filterFromQuery(r.query, "logs");
  const ids = multi(r.query, "messageIds");
  if (ids.length > 0) filter.values.set("messageId", ids);
  const latestFirst = r.query.get("order") !== "earliestFirst";
  const page = await ctx.logs.list(
    latestFirst,
    countParam(r.query, 100, 1000),
    logCursorParam(r.query),
    (e) => matches(filter, e.meta, { time: e.time, state: e.state }),
    // Only events of these messages can match: read through their log index (store/log-store.ts).
    filter.values.get("messageId"),
  );
  const key = (r.segments[0] ?? "").toLowerCase() === "logs" ? "logs" : "events";
  const items = page.items.map(renderEvent);
  reply(r.res, 200, page.cursor ? { cursor: page.cursor, [key]: items } : { [key]: items });
};

function renderEvent(e: LogEvent): Record<string, unknown> {
  const m = e.meta;
  const x = e.extra;
  return {
    time: e.time,
    messageId: m.messageId,
    state: e.state,
    url: m.url,
    method: m.method,
    header: redactHeaders(m.header, m.redact),
    maxRetries: m.maxRetries,
    timeout: m.timeoutMs,
    createdAt: m.createdAt,
    notBefore: m.notBefore,
    ...(m.topicName ? { topicName: m.topicName, endpointName: m.endpointName } : {}),
    ...(m.callback ? { callback: m.callback, callbackHeaders: m.callbackHeader } : {}),
    ...(m.failureCallback
      ? { failureCallback: m.failureCallback, failureCallbackHeaders: m.failureCallbackHeader }
      : {}),
    ...(m.retryDelayExpression
      ? { retryDelayExpression: m.retryDelayExpression, retryDelayExpr: m.retryDelayExpression }
      : {}),
    ...(m.labels ? { label: m.labels[0], labels: m.labels } : {}),
    ...(m.callerIP ? { callerIP: m.callerIP } : {}),
    ...(m.scheduleId ? { scheduleId: m.scheduleId } : {}),
    ...(m.queueName ? { queueName: m.queueName } : {}),
    ...x,
    ...(x["responseHeader"] ? { responseHeaders: x["responseHeader"] } : {}),
  };
}

/**
 * The `cursor` parameter, checked now (400 `invalid cursor`); undefined when absent, empty or 0
 * (a loop's `cursor ?? 0` sent as a start: the first page, not "before 1970").
 */
function logCursorParam(q: URLSearchParams): string | undefined {
  const raw = q.get("cursor");
  if (raw === null || /^0*$/.test(raw)) return undefined;
  parseLogCursor(raw);
  return raw;
}
