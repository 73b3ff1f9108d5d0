import { ApiError, query, queue, queueSend } from "../api.js";
import { Action, ErrorLine, Facts, fmtTime, HeaderList, Panel, Pre, useLoad } from "../ui.js";
import { href } from "../routes.js";
import type { LogEvent } from "./events.js";

/** A message as GET /v2/messages/{id} renders it (DLQ entries add to it). */
export interface Message {
  messageId: string;
  url: string;
  method: string;
  header: Record<string, string[]>;
  body?: string;
  bodyBase64?: string;
  maxRetries: number;
  notBefore: number;
  createdAt: number;
  queueName?: string;
  topicName?: string;
  scheduleId?: string;
}

/**
 * A message: while it is stored (waiting, in flight, retrying) GET /v2/messages/{id} has its
 * headers and body and it can be cancelled; once finished only its log events remain.
 */
export function MessageDetail(p: {
  id: string;
  /** Its newest event, once the list has it (the message itself loads meanwhile). */
  event: LogEvent | undefined;
  onClose: () => void;
  onChanged: () => void;
}) {
  const id = p.id;
  const msg = useLoad(async () => {
    try {
      return await queue<Message>(`messages/${encodeURIComponent(id)}`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return null;
      throw err;
    }
  }, [id]);
  const m = msg.data;
  return (
    <Panel title={`Message ${id}`} onClose={p.onClose}>
      <ErrorLine error={msg.error} />
      {m === null && (
        <p class="hint">
          Finished or cancelled: the message is no longer stored. Its last event is shown below.
        </p>
      )}
      {m && (
        <>
          <div class="bar">
            <Action
              label="Cancel message"
              kind="danger"
              confirm={`Cancel message ${id}?`}
              done="Message cancelled"
              run={async () => {
                await queueSend("DELETE", `messages/${encodeURIComponent(id)}`);
                msg.reload();
                p.onChanged();
              }}
            />
          </div>
          <Facts
            items={[
              ["Destination", <span class="url">{`${m.method} ${m.url}`}</span>],
              ["Created", fmtTime(m.createdAt)],
              ["Not before", fmtTime(m.notBefore)],
              ["Max retries", String(m.maxRetries)],
              ["Queue / group", m.queueName ?? m.topicName ?? "—"],
              ["Workflow run", <RunLink messageId={id} />],
            ]}
          />
          <h3>Headers</h3>
          <HeaderList headers={m.header} />
          <h3>Body</h3>
          <Pre value={m.body ?? (m.bodyBase64 ? `(base64) ${m.bodyBase64}` : "(empty)")} />
        </>
      )}
      <h3>Event</h3>
      {p.event ? <Pre value={p.event} /> : <p class="hint">Loading…</p>}
    </Panel>
  );
}

/**
 * The workflow run a message belongs to, as a link, or "—": the workflow logs answer which run
 * holds a message id (GET /v2/workflows/events?messageId=), as the message API does not say.
 */
export function RunLink(p: { messageId: string }) {
  const run = useLoad(
    () =>
      queue<{ runs: { workflowRunId: string }[] }>(
        `workflows/events${query({ messageId: p.messageId, count: "1" })}`,
      ).then((r) => r.runs[0]?.workflowRunId),
    [p.messageId],
  );
  if (run.error) return <span class="hint">{run.error}</span>;
  return run.data ? <a href={href.workflowRun(run.data)}>{run.data}</a> : <>—</>;
}
