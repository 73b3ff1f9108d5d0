import { queueSend } from "../api.js";
import { refreshNow } from "../refresh.js";
import { href } from "../routes.js";
import { Action } from "../ui.js";

/** What was done to a DLQ entry, kept on the page until the next action (DlqOutcomeLine). */
export type DlqOutcome =
  { kind: "retried"; dlqId: string; messageId: string } | { kind: "deleted"; dlqId: string };

/**
 * Retry (POST /v2/dlq/retry/{dlqId}: the message is published again as a new one and the entry
 * leaves the DLQ) or delete (after a question) one DLQ entry; `onDone` gets what happened, then
 * everything shown loads again (the counts, the list, the message: refresh.ts refreshNow).
 */
export function DlqActions(p: { dlqId: string; onDone: (o: DlqOutcome) => void }) {
  const id = encodeURIComponent(p.dlqId);
  return (
    <div class="bar">
      <Action
        label="Retry"
        kind="primary"
        title="Deliver the message again: it is published anew and leaves the DLQ"
        run={async () => {
          const r = await queueSend<{ messageId: string }>("POST", `dlq/retry/${id}`);
          p.onDone({ kind: "retried", dlqId: p.dlqId, messageId: r.messageId });
          refreshNow();
        }}
      />
      <Action
        label="Delete"
        kind="danger"
        confirm={`Delete DLQ entry ${p.dlqId}? The failed message cannot be retried after this.`}
        run={async () => {
          await queueSend("DELETE", `dlq/${id}`);
          p.onDone({ kind: "deleted", dlqId: p.dlqId });
          refreshNow();
        }}
      />
    </div>
  );
}

/** The outcome of a DLQ action as a line that stays (a toast goes): retried as which message. */
export function DlqOutcomeLine(p: { outcome: DlqOutcome | undefined }) {
  const o = p.outcome;
  if (!o) return null;
  return (
    <p class="outcome" role="status" data-outcome={o.kind}>
      {o.kind === "retried" ? (
        <>
          Retried DLQ entry {o.dlqId}: published again as message{" "}
          <a href={href.message(o.messageId)}>{o.messageId}</a>; the entry left the DLQ.
        </>
      ) : (
        <>Deleted DLQ entry {o.dlqId}.</>
      )}
    </p>
  );
}
