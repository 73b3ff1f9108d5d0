import { ApiError, get, queue, queueSend } from "../api.js";
import { Action, Badge, ErrorLine, Facts, HeaderList, Page, Pre, useLoad } from "../ui.js";
import { useState } from "preact/hooks";
import { DlqActions, DlqOutcomeLine, type DlqOutcome } from "./dlq-actions.js";
import { RunLink } from "./message-detail.js";
import type { MessageRow } from "./message-list.js";
import {
  base64Bytes,
  Body,
  decodeBody,
  fmtDuration,
  fmtRelative,
  fmtZoned,
  hrefOf,
} from "./shown.js";

/** One attempt (src/admin/console/messages.ts, Attempt). */
export interface Attempt {
  startedAt: number;
  durationMs?: number;
  status?: number;
  responseHeader?: Record<string, string[]>;
  responseBody?: string;
  responseBodyTruncated?: boolean;
  error?: string;
  outcome: "DELIVERED" | "RETRY" | "FAILED" | "ERROR";
  nextDeliveryTime?: number;
}

/** The stored message while it waits (GET /v2/messages/{id}). */
interface Stored {
  url: string;
  method: string;
  header: Record<string, string[]>;
  body?: string;
  bodyBase64?: string;
  notBefore: number;
  createdAt: number;
  maxRetries: number;
}

export interface Detail {
  messageId: string;
  stored: Stored | null;
  row: MessageRow | null;
  attempts: Attempt[];
  events: { state: string; time: number; header?: Record<string, string[]>; maxRetries?: number }[];
}

/** A DLQ entry keeps the request body of a failed message (GET /v2/dlq/{dlqId}). */
interface DlqEntry {
  header: Record<string, string[]>;
  body?: string;
  bodyBase64?: string;
}

/**
 * A message's page (`#/messages/<messageId>`): its request, every attempt as a timeline, and what
 * comes next (the next attempt's time, or its DLQ entry).
 */
export function MessagePage(p: { id: string }) {
  const detail = useLoad(() => get<Detail>(`messages/${encodeURIComponent(p.id)}`), [p.id]);
  const dlqId = detail.data?.row?.dlqId;
  const dlq = useLoad(async () => {
    if (!dlqId) return null;
    return queue<DlqEntry>(`dlq/${encodeURIComponent(dlqId)}`).catch((err: unknown) => {
      if (err instanceof ApiError && err.status === 404) return null;
      throw err;
    });
  }, [dlqId]);
  const d = detail.data;
  return (
    <Page title={`Message ${p.id}`} actions={<a href="#/messages">‹ All messages</a>}>
      <ErrorLine error={detail.error} />
      {detail.loading && !d && <p class="empty">Loading…</p>}
      {d && (
        <div class="message-page">
          <Summary d={d} onChanged={detail.reload} />
          <Next d={d} dlqKept={dlq.data != null} />
          <Request d={d} dlq={dlq.data ?? null} />
          <h2 class="section">Attempts ({d.attempts.length})</h2>
          <Timeline attempts={d.attempts} />
          <details>
            <summary>Every event ({d.events.length})</summary>
            <Pre value={d.events} />
          </details>
        </div>
      )}
    </Page>
  );
}

function Summary(p: { d: Detail; onChanged: () => void }) {
  const r = p.d.row;
  const s = p.d.stored;
  return (
    <section class="card">
      <div class="bar">
        {r && <Badge text={r.state} />}
        {s && (
          <Action
            label="Cancel message"
            kind="danger"
            confirm={`Cancel message ${p.d.messageId}?`}
            done="Message cancelled"
            run={async () => {
              await queueSend("DELETE", `messages/${encodeURIComponent(p.d.messageId)}`);
              p.onChanged();
            }}
          />
        )}
      </div>
      <Facts
        items={[
          [
            "Destination",
            <span class="url">{`${s?.method ?? r?.method ?? ""} ${s?.url ?? r?.url ?? ""}`}</span>,
          ],
          ["Created", fmtZoned(s?.createdAt ?? r?.createdAt)],
          ["Attempts", String(r?.attempts ?? 0)],
          ["Max retries", String(s?.maxRetries ?? p.d.events[0]?.maxRetries ?? "—")],
          ["Queue", r?.queueName ?? "—"],
          ["URL group", r?.topicName ?? "—"],
          [
            "Schedule",
            r?.scheduleId ? <a href={hrefOf.schedule(r.scheduleId)}>{r.scheduleId}</a> : "—",
          ],
          ["Labels", r && r.labels.length > 0 ? r.labels.join(", ") : "—"],
          ["Workflow run", <RunLink messageId={p.d.messageId} />],
        ]}
      />
    </section>
  );
}

/**
 * What comes next: the next attempt, the DLQ entry (with Retry and Delete while it is kept), or
 * nothing (finished).
 */
function Next(p: { d: Detail; dlqKept: boolean }) {
  const r = p.d.row;
  const [outcome, setOutcome] = useState<DlqOutcome | undefined>();
  const text = (() => {
    if (!r) return "No event of this message is in the log.";
    switch (r.state) {
      case "DELIVERED":
        return "Delivered: nothing more will happen.";
      case "CANCELED":
        return "Cancelled: it will not be delivered.";
      case "ACTIVE":
        return "An attempt is running now.";
      case "CANCEL_REQUESTED":
        return "Cancel requested: the running attempt is the last.";
      case "FAILED":
        return undefined;
      default:
        return r.nextDeliveryTime
          ? `Next attempt ${fmtZoned(r.nextDeliveryTime)} (${fmtRelative(r.nextDeliveryTime)}).`
          : "Waiting to be delivered (due now, or waiting for its queue or flow-control key).";
    }
  })();
  return (
    <section class="card next" aria-label="What comes next">
      <h2 class="section">What comes next</h2>
      {text !== undefined ? (
        <p>{text}</p>
      ) : (
        <p>
          Every attempt failed: the message was moved to the dead-letter queue
          {r?.dlqId ? (
            <>
              {" as "}
              <a href={hrefOf.dlq(r.dlqId)} data-dlq-link>
                DLQ entry {r.dlqId}
              </a>
              , where it can be retried.
            </>
          ) : (
            "."
          )}
        </p>
      )}
      {r?.dlqId && p.dlqKept && <DlqActions dlqId={r.dlqId} onDone={setOutcome} />}
      <DlqOutcomeLine outcome={outcome} />
    </section>
  );
}

function Request(p: { d: Detail; dlq: DlqEntry | null }) {
  const s = p.d.stored;
  const headers = s?.header ?? p.dlq?.header ?? p.d.events[0]?.header;
  const source = s ?? p.dlq;
  return (
    <section class="card">
      <h2 class="section">Request</h2>
      <h3>Headers</h3>
      <HeaderList headers={headers} />
      <h3>Body</h3>
      {source ? (
        <Body
          {...(source.bodyBase64 !== undefined
            ? { base64: source.bodyBase64 }
            : { text: source.body ?? "" })}
        />
      ) : (
        <p class="hint">
          Not kept: the queue keeps a body while the message waits and in its DLQ entry, not after
          it is delivered or cancelled.
        </p>
      )}
    </section>
  );
}

/** Longest excerpt of a response body shown on an attempt's line (the whole body is below it). */
const EXCERPT_CHARS = 200;

/** The start of a response body as one line of text ("binary, N bytes" when it is not text). */
export function excerptOf(base64: string | undefined): string | undefined {
  if (!base64) return undefined;
  const bytes = base64Bytes(base64);
  const d = decodeBody(bytes);
  if (d.kind === "hex") return `(binary, ${bytes.length} bytes)`;
  const line = d.text.replace(/\s+/g, " ").trim();
  return line.length > EXCERPT_CHARS ? `${line.slice(0, EXCERPT_CHARS)}…` : line;
}

/**
 * Every attempt of a message, oldest first: when it started, how long it took, the HTTP status
 * or the error, an excerpt of the response body, and the whole response on demand.
 */
export function Timeline(p: { attempts: Attempt[] }) {
  if (p.attempts.length === 0) return <p class="empty">No attempt yet.</p>;
  return (
    <ol class="timeline attempts" aria-label="attempts">
      {p.attempts.map((a, i) => (
        <li key={i} class={`attempt o-${a.outcome.toLowerCase()}`}>
          <div class="attempt-head">
            <strong>Attempt {i + 1}</strong>
            <span>{fmtZoned(a.startedAt)}</span>
            <span>{fmtDuration(a.durationMs)}</span>
            <span class="attempt-status">
              {a.status === undefined ? "—" : a.status === 0 ? "no answer" : `HTTP ${a.status}`}
            </span>
            <Badge text={a.outcome} />
          </div>
          {a.error && <p class="error-line">{a.error}</p>}
          {excerptOf(a.responseBody) !== undefined && (
            <p class="excerpt" data-excerpt title="the start of the response body">
              {excerptOf(a.responseBody)}
            </p>
          )}
          {a.nextDeliveryTime && (
            <p class="hint">Retry scheduled for {fmtZoned(a.nextDeliveryTime)}</p>
          )}
          <details>
            <summary>Response headers and body</summary>
            <h3>Response headers</h3>
            <HeaderList headers={a.responseHeader} />
            <h3>Response body</h3>
            <Body base64={a.responseBody} cut={a.responseBodyTruncated === true} />
          </details>
        </li>
      ))}
    </ol>
  );
}
