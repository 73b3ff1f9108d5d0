import { query, queue } from "../api.js";
import { href } from "../routes.js";
import { useLoad } from "../ui.js";

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
