import { messageOf } from "../../../shared/errors.js";
import type { AttemptResult } from "../../domain/message.js";
import type { DlqEntry } from "../../store/dlq-store.js";
import type { QueueContext } from "../../routes/context.js";
import { isRunEntry } from "../http/dlq.js";
import { endRun } from "./lifecycle.js";
import { NON_WORKFLOW_DESTINATION, REST_TRIGGER_NEEDS_V1 } from "./protocol.js";
import type { FailureOutcome } from "../state/run.js";

/** What the logs show as the failed step's error: the SDK's message, else the attempt's error. */
export function failureText(r: AttemptResult): string {
  try {
    const v = JSON.parse(r.body.toString("utf8")) as { message?: unknown };
    const ours = r.error === NON_WORKFLOW_DESTINATION || r.error === REST_TRIGGER_NEEDS_V1;
    if (typeof v.message === "string" && !ours) return v.message;
  } catch {
    // Not the SDK's JSON error body.
  }
  return r.error ?? r.body.toString("utf8");
}

/**
 * Ends run R as failed for `entry`, its message's DLQ entry, when the failure's own end of the
 * run was cut off (docs/workflow.md §7, crash recovery): R is still active and the failed message
 * is still one of R's (a resumed or restarted run has new messages, so an old entry never ends
 * it). `failureCall` is the failure-callback message when known. True when R ended now.
 */
export async function endUnfinishedFailure(
  ctx: QueueContext,
  entry: DlqEntry,
  failureCall?: string,
): Promise<boolean> {
  const m = entry.meta;
  const runId = m.workflow?.runId ?? "";
  const run = await ctx.workflows.config(runId);
  if (run?.state !== "RUN_STARTED") return false;
  if (!(await ctx.workflows.hasMessage(runId, m.messageId))) return false;
  const failure: FailureOutcome | undefined =
    failureCall !== undefined
      ? { state: "CALLBACK_INPROGRESS", messageId: failureCall }
      : run.config.failureCallback !== undefined
        ? { state: "CALLBACK_INPROGRESS" }
        : undefined;
  const last: AttemptResult = {
    status: m.responseStatus,
    header: m.responseHeader,
    body: Buffer.from(m.responseBodyBase64, "base64"),
  };
  return endRun(ctx, runId, "RUN_FAILED", {
    dlqId: m.dlqId,
    error: failureText(last),
    ...(failure ? { failure: JSON.stringify(failure) } : {}),
  });
}

/**
 * Finishes what a crash between a workflow message's final failure (the finish transition that
 * moved it to the DLQ) and the bookkeeping after it left undone (docs/workflow.md §7): runs still
 * active whose message is in the DLQ end as failed, and DLQ entries of context.call requests
 * (which never stay there) are removed. One pass over the DLQ (of every queue partition: the DLQ
 * listing merges them; each run is then found wherever it lives), run when the queue starts. The
 * same pass indexes workflow entries written before the DLQ's workflow index existed.
 */
export async function repairAfterCrash(ctx: QueueContext): Promise<void> {
  let cursor: string | undefined;
  let repaired = 0;
  do {
    const page = await ctx.dlq.list(false, 100, cursor, (e) => e.meta.workflow !== undefined);
    // Entries of a stashd older than the workflow DLQ index join it (counts, store/depth.ts).
    await ctx.dlq.indexWorkflow(page.items.map((e) => e.meta.dlqId));
    for (const e of page.items) {
      if (e.meta.workflow?.callType === "toCallback") {
        repaired += await ctx.dlq.delete([e.meta.dlqId]);
      } else if (isRunEntry(e) && (await endUnfinishedFailure(ctx, e))) {
        repaired += 1;
      }
    }
    cursor = page.cursor;
  } while (cursor);
  if (repaired > 0) ctx.log.info("workflow failures finished after a crash", { repaired });
}

/** Runs `repairAfterCrash` in the background; a failure only logs. */
export function startRepair(ctx: QueueContext): void {
  repairAfterCrash(ctx).catch((err: unknown) => {
    ctx.log.warn("workflow crash repair failed", { err: messageOf(err) });
  });
}
