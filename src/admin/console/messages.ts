import { AppError } from "../../shared/errors.js";
import { EVENT_FILTERS } from "../../shared/message-filters.js";
import { callApi } from "./upstream.js";

/**
 * The console's message-centric views (docs/console.md, Messages): one row per message and one
 * page per message, built from the queue API's event log (`GET /v2/events`) and stored messages
 * (`GET /v2/messages/{id}`), so they show exactly what an SDK could read.
 */

/** A GET on the queue API answering JSON; a 4xx keeps its status and message. */
export type QueueGet = <T>(path: string) => Promise<T>;

export function queueGetter(queueUrl: string, token: () => string): QueueGet {
  return async <T>(path: string): Promise<T> => {
    const reply = await callApi(`${queueUrl}/v2/${path}`, token(), { method: "GET" });
    const text = reply.body.toString("utf8");
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new AppError("backend_unavailable", `queue API answered ${reply.status} without JSON`);
    }
    if (reply.status === 404) throw new AppError("not_found", errorText(parsed, "not found"));
    if (reply.status >= 400 && reply.status < 500) {
      throw new AppError("bad_request", errorText(parsed, `queue API answered ${reply.status}`));
    }
    if (reply.status !== 200) {
      throw new AppError("backend_unavailable", `queue API answered ${reply.status}`);
    }
    return parsed as T;
  };
}

function errorText(parsed: unknown, fallback: string): string {
  return parsed && typeof parsed === "object" && "error" in parsed
    ? String((parsed as { error: unknown }).error)
    : fallback;
}

/** A log event as GET /v2/events renders it (src/queue/routes/logs.ts), the fields used here. */
export interface ApiEvent {
  time: number;
  messageId: string;
  state: string;
  url: string;
  method?: string;
  createdAt?: number;
  notBefore?: number;
  header?: Record<string, string[]>;
  labels?: string[];
  queueName?: string;
  topicName?: string;
  scheduleId?: string;
  callback?: string;
  failureCallback?: string;
  maxRetries?: number;
  responseStatus?: number;
  responseHeader?: Record<string, string[]>;
  responseBody?: string;
  responseBodyTruncated?: boolean;
  error?: string;
  nextDeliveryTime?: number;
  startedAt?: number;
  durationMs?: number;
  dlqId?: string;
}

/** One row of the Messages list: a message as it is now. */
export interface MessageRow {
  messageId: string;
  url: string;
  method: string;
  /** The state of its latest event (ERROR is followed by RETRY or FAILED at once). */
  state: string;
  /** Delivery attempts that ended (DELIVERED or ERROR events). */
  attempts: number;
  lastStatus?: number | undefined;
  lastError?: string | undefined;
  /** When the next attempt is due (a message waiting to retry, or delayed). */
  nextDeliveryTime?: number | undefined;
  createdAt: number;
  labels: string[];
  queueName?: string | undefined;
  topicName?: string | undefined;
  scheduleId?: string | undefined;
  dlqId?: string | undefined;
}

/**
 * The filters the Messages list passes to the events API as they are: the page's filters
 * (src/shared/message-filters.ts) but `state`, which is the state now (matched below).
 */
const PASSED: readonly string[] = EVENT_FILTERS.filter((k) => k !== "state");
/** Query parameters of the list besides the filters. */
const LIST_PARAMS: readonly string[] = [...EVENT_FILTERS, "cursor"];
/** States a message ends in: one event each, so the log lists those messages directly. */
const FINAL = new Set(["DELIVERED", "FAILED", "CANCELED"]);
/** "State now" values that mean "not finished", matched on the message's latest event. */
const PENDING: Record<string, string[]> = {
  CREATED: ["CREATED"],
  ACTIVE: ["ACTIVE"],
  RETRY: ["RETRY", "ERROR"],
  IN_PROGRESS: ["CREATED", "ACTIVE", "RETRY", "ERROR", "CANCEL_REQUESTED"],
  CANCEL_REQUESTED: ["CANCEL_REQUESTED"],
};
/** Rows per page, and how many anchor pages one request may read to fill a filtered page. */
const ROWS = 50;
const MAX_ANCHOR_PAGES = 10;
/** Most events read for one page's rows (or one message), 1,000 per call. */
const MAX_EVENT_PAGES = 20;

/**
 * `GET /console/api/messages?<filters>&state=&cursor=` → `{messages, cursor?}`: up to 50
 * messages, newest first. Without a final state the rows are anchored on CREATED events (one per
 * message: the list is ordered by creation, `fromDate`/`toDate` bound the creation time); with
 * DELIVERED, FAILED or CANCELED on that final event (ordered by when it ended). A pending state
 * (CREATED, ACTIVE, RETRY, IN_PROGRESS) is matched on each message's latest event, reading at
 * most 10 anchor pages per request (the cursor goes on from there, so a page may hold fewer rows).
 * A parameter that is not one of the page's filters is a 400 naming it, as the queue API answers.
 */
export async function listMessages(
  get: QueueGet,
  q: URLSearchParams,
): Promise<{ messages: MessageRow[]; cursor?: string }> {
  for (const key of q.keys()) {
    if (!LIST_PARAMS.includes(key)) throw new AppError("bad_request", `unknown filter key: ${key}`);
  }
  const state = normalState(q.get("state") ?? "");
  const anchorState = FINAL.has(state) ? state : "CREATED";
  const params = new URLSearchParams();
  for (const key of PASSED) for (const v of q.getAll(key)) if (v !== "") params.append(key, v);
  params.set("state", anchorState);
  params.set("count", String(ROWS));
  let cursor = q.get("cursor") ?? "";
  const rows: MessageRow[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < MAX_ANCHOR_PAGES && rows.length < ROWS; i++) {
    if (cursor) params.set("cursor", cursor);
    const page = await get<{ events: ApiEvent[]; cursor?: string }>(`events?${params}`);
    const anchors = page.events.filter((e) => !seen.has(e.messageId) && seen.add(e.messageId));
    const built = await rowsOf(get, anchors);
    rows.push(...built.filter((r) => matchesState(r, state)));
    cursor = page.cursor ?? "";
    if (!cursor) break;
  }
  return cursor ? { messages: rows, cursor } : { messages: rows };
}

function normalState(raw: string): string {
  const up = raw.trim().toUpperCase();
  if (up === "CANCELLED") return "CANCELED";
  if (up !== "" && !FINAL.has(up) && !(up in PENDING)) {
    throw new AppError("bad_request", `unknown state: ${raw}`);
  }
  return up;
}

function matchesState(r: MessageRow, state: string): boolean {
  if (state === "" || FINAL.has(state)) return true;
  return (PENDING[state] ?? []).includes(r.state);
}

/** The rows of messages `anchors` (one event each), from all their events since creation. */
async function rowsOf(get: QueueGet, anchors: ApiEvent[]): Promise<MessageRow[]> {
  if (anchors.length === 0) return [];
  const since = Math.min(...anchors.map((a) => a.createdAt ?? a.time));
  const events = await eventsOf(
    get,
    anchors.map((a) => a.messageId),
    since,
  );
  const byId = new Map<string, ApiEvent[]>();
  for (const e of events) byId.set(e.messageId, [...(byId.get(e.messageId) ?? []), e]);
  return anchors.map((a) => rowOf(a, byId.get(a.messageId) ?? [a]));
}

/**
 * Every event of messages `ids`, oldest first, read from `since`, at most MAX_EVENT_PAGES pages.
 * The API reads them through the message log index (one page holds them all, whatever else the
 * log holds); for messages stored before the index it scans the log, and the time cursor then
 * starts that scan at their creation, not at the start of the log.
 */
export async function eventsOf(get: QueueGet, ids: string[], since: number): Promise<ApiEvent[]> {
  const params = new URLSearchParams({ order: "earliestFirst", count: "1000" });
  for (const id of ids) params.append("messageIds", id);
  let cursor = String(Math.max(0, since));
  const out: ApiEvent[] = [];
  for (let i = 0; i < MAX_EVENT_PAGES && cursor; i++) {
    params.set("cursor", cursor);
    const page = await get<{ events: ApiEvent[]; cursor?: string }>(`events?${params}`);
    out.push(...page.events);
    cursor = page.cursor ?? "";
  }
  return out;
}

/** Attempt-ending events: a delivery answered (or failed to) and was recorded. */
const isAttempt = (e: ApiEvent) => e.state === "DELIVERED" || e.state === "ERROR";

function rowOf(anchor: ApiEvent, events: ApiEvent[]): MessageRow {
  const last = events[events.length - 1] ?? anchor;
  const attempts = events.filter(isAttempt);
  const lastAttempt = attempts[attempts.length - 1];
  return {
    messageId: anchor.messageId,
    url: anchor.url,
    method: anchor.method ?? "POST",
    state: last.state,
    attempts: attempts.length,
    lastStatus: lastAttempt?.responseStatus,
    lastError: lastAttempt?.error,
    nextDeliveryTime: nextOf(last, lastAttempt),
    createdAt: anchor.createdAt ?? events[0]?.time ?? anchor.time,
    labels: anchor.labels ?? [],
    queueName: anchor.queueName,
    topicName: anchor.topicName,
    scheduleId: anchor.scheduleId,
    dlqId: last.dlqId,
  };
}

/** When a pending message's next attempt is due: its retry time, or its delay. */
function nextOf(last: ApiEvent, lastAttempt: ApiEvent | undefined): number | undefined {
  if (last.state === "RETRY" || last.state === "ERROR") return lastAttempt?.nextDeliveryTime;
  if (last.state === "CREATED" && (last.notBefore ?? 0) > last.time) return last.notBefore;
  return undefined;
}

/** One attempt of a message, as its page shows it. */
export interface Attempt {
  /** When the request was sent (ms); the event time when not recorded (older stashd). */
  startedAt: number;
  durationMs?: number | undefined;
  status?: number | undefined;
  responseHeader?: Record<string, string[]> | undefined;
  /** Base64 of the response body as kept (STASHD_QUEUE_LOGGED_RESPONSE_BYTES). */
  responseBody?: string | undefined;
  responseBodyTruncated?: boolean | undefined;
  error?: string | undefined;
  outcome: "DELIVERED" | "RETRY" | "FAILED" | "ERROR";
  nextDeliveryTime?: number | undefined;
}

export interface MessagePage {
  messageId: string;
  /** GET /v2/messages/{id} while stored (not finished), else null. */
  stored: unknown;
  row: MessageRow | null;
  attempts: Attempt[];
  /** Every event, oldest first. */
  events: ApiEvent[];
}

/**
 * `GET /console/api/messages/<id>` → the stored message (request headers and body while it
 * waits), its attempts and its events. 404 when neither the queue nor the log knows the id.
 */
export async function messagePage(get: QueueGet, id: string): Promise<MessagePage> {
  const stored = await get<{ createdAt?: number }>(`messages/${encodeURIComponent(id)}`).catch(
    (err: unknown) => {
      if (err instanceof AppError && err.status === 404) return null;
      throw err;
    },
  );
  let since = stored?.createdAt;
  if (since === undefined) {
    // Finished: its newest event (read newest first, so recent messages are found at once).
    const latest = await get<{ events: ApiEvent[] }>(
      `events?${new URLSearchParams({ messageId: id, count: "1" })}`,
    );
    const e = latest.events[0];
    if (!e && !stored) throw new AppError("not_found", `no message ${id} in the queue or the log`);
    since = e?.createdAt ?? e?.time ?? 0;
  }
  const events = await eventsOf(get, [id], since);
  const anchor = events[0];
  return {
    messageId: id,
    stored,
    row: anchor ? rowOf(anchor, events) : null,
    attempts: attemptsOf(events),
    events,
  };
}

/** The attempts in `events` (oldest first) with what followed each. */
function attemptsOf(events: ApiEvent[]): Attempt[] {
  const out: Attempt[] = [];
  events.forEach((e, i) => {
    if (!isAttempt(e)) return;
    const after = e.state === "ERROR" ? events[i + 1] : undefined;
    const outcome =
      e.state === "DELIVERED"
        ? "DELIVERED"
        : after?.state === "RETRY"
          ? "RETRY"
          : after?.state === "FAILED"
            ? "FAILED"
            : "ERROR";
    out.push({
      startedAt: e.startedAt ?? e.time,
      durationMs: e.durationMs,
      status: e.responseStatus,
      responseHeader: e.responseHeader,
      responseBody: e.responseBody,
      responseBodyTruncated: e.responseBodyTruncated,
      error: e.error,
      outcome,
      nextDeliveryTime: e.nextDeliveryTime,
    });
  });
  return out;
}
