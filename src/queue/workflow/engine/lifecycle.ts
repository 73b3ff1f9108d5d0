import { messageOf } from "../../../shared/errors.js";
import type { QueueContext } from "../../routes/context.js";
import { publishServerStep } from "./produce.js";
import type { RunRecord, RunState } from "../state/run.js";

type EndState = Exclude<RunState, "RUN_STARTED">;

/**
 * Ends run `runId` if it is active (docs/workflow.md §6): the state change is one transition;
 * then the run's queued messages are cancelled (an in-flight one finishes, and anything still
 * delivered later is dropped at delivery) and an invoked run reports back to its invoker.
 * Returns false when the run was not active.
 */
export async function endRun(
  ctx: QueueContext,
  runId: string,
  state: EndState,
  extra: Record<string, string> = {},
): Promise<boolean> {
  const now = Date.now();
  const ids = await ctx.workflows.end(now, runId, state, extra);
  if (!ids) return false;
  if (state === "RUN_CANCELED") await noteCanceled(ctx, runId, ids);
  await ctx.messages.cancel(now, ids);
  const run = await ctx.workflows.get(runId);
  if (run?.invoker) await reportToInvoker(ctx, run, state);
  return true;
}

/**
 * Keeps the ids of the run's messages still stored (not delivered yet) for the logs, which show
 * them as STEP_CANCELED (docs/workflow.md §12).
 */
async function noteCanceled(ctx: QueueContext, runId: string, ids: readonly string[]) {
  const live = await ctx.messages.getMany(ids);
  if (live.length === 0) return;
  const canceled = JSON.stringify(live.map((m) => m.meta.messageId));
  await ctx.workflows.setFields(runId, { canceled });
}

/**
 * The result step of an invoked run, appended to the invoker's run (docs/workflow.md §10). An
 * invoker that has ended meanwhile simply gets nothing.
 */
async function reportToInvoker(ctx: QueueContext, run: RunRecord, state: EndState) {
  const inv = run.invoker;
  if (!inv) return;
  const out = JSON.stringify({
    body: run.response ?? "",
    ...(state === "RUN_FAILED" ? { isFailed: true } : {}),
    ...(state === "RUN_CANCELED" ? { isCanceled: true } : {}),
  });
  // The invoked run's identity is for the invoker's logs (docs/workflow.md §10, §12).
  const step = {
    ...inv.step,
    out,
    invokedWorkflowRunId: run.runId,
    invokedWorkflowUrl: run.url,
    invokedWorkflowCreatedAt: run.createdAt,
  };
  try {
    await publishServerStep(ctx, inv.workflowRunId, inv.workflowUrl, inv.headers, step);
  } catch (err) {
    ctx.log.warn("invoke result not delivered", { runId: run.runId, err: messageOf(err) });
  }
}
