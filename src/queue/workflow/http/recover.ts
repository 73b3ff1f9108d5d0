import { AppError } from "../../../shared/errors.js";
import { failureCallbackMessage } from "../../delivery/callbacks.js";
import { baseMeta } from "../../domain/build.js";
import type { MessageMeta } from "../../domain/message.js";
import type { Handler, QueueContext, QueueRequest } from "../../routes/context.js";
import { decode, notFound, reply } from "../../routes/util.js";
import { selectRunEntries, type RunEntry } from "./dlq.js";
import { recoveryOf, withLabelHeader } from "./recover-options.js";
import { runTag, stepEntry } from "../state/run.js";
import type { Append } from "../state/store.js";

type Mode = "resume" | "restart";

/**
 * Starts failed run R again under the same id (docs/workflow.md §12): restart from its trigger,
 * or resume with the steps done before the failed message and that message delivered again.
 * The DLQ entry goes away. The run is placed anew (docs/workflow.md §3, Partitions). Returns
 * the new run's id and creation time.
 */
async function recover(ctx: QueueContext, r: QueueRequest, x: RunEntry, mode: Mode) {
  const { entry, run } = x;
  if (!run) throw new AppError("precondition_failed", "the failed run's record has expired");
  const { config, dueAt } = recoveryOf(ctx, r, run.config);
  const now = Date.now();
  const entries = mode === "resume" ? await ctx.workflows.entries(run.runId) : [];
  const failedAt = entries.findIndex((e) => e.startsWith(`{"messageId":"${entry.meta.messageId}"`));
  const kept = mode === "resume" && failedAt > 0 ? entries.slice(0, failedAt) : [];
  const body = kept.length > 0 ? entry.body : run.body;
  // Placed as a new run: the flow-control key may have been overridden.
  const part = ctx.workflows.placeRun(run.runId, config.flowControl?.key);
  const meta: MessageMeta = {
    ...baseMeta(entry.meta),
    messageId: ctx.workflows.messageId(part, undefined),
    url: run.url,
    createdAt: now,
    notBefore: Math.max(dueAt, now),
    maxRetries: config.maxRetries,
    retryDelayExpression: config.retryDelayExpression,
    flowControl: config.flowControl,
    labels: config.labels,
    failureCallback: config.failureCallback,
    header: withLabelHeader(entry.meta.header, config),
    depth: 0,
  };
  const callType = kept.length > 0 ? (entry.meta.workflow?.callType ?? "step") : "step";
  meta.workflow = runTag(run.runId, callType, config);
  const items: Append[] = kept.map((e) => ({ id: idOf(e), entry: e }));
  items.push({
    id: meta.messageId,
    entry: stepEntry(meta.messageId, body, callType),
    message: { meta, body, dueAt: Math.max(dueAt, now) },
  });
  const fields = {
    url: run.url,
    config: JSON.stringify(config),
    body: run.body,
    ...(run.callerIp ? { callerIp: run.callerIp } : {}),
    ...(run.invoker ? { invoker: JSON.stringify(run.invoker) } : {}),
  };
  const started = await ctx.workflows.start(now, part, run.runId, fields, items);
  if (!started.created) throw new AppError("conflict", `workflow run ${run.runId} is active`);
  await ctx.dlq.delete([entry.meta.dlqId]);
  ctx.dispatcher.wake(Math.max(dueAt, now));
  return { workflowRunId: run.runId, workflowCreatedAt: now };
}

const idOf = (entry: string): string => (JSON.parse(entry) as { messageId: string }).messageId;

/** POST /v2/workflows/dlq/{resume|restart}: dlqIds or filters → `{workflowRuns, cursor?}`. */
const many =
  (mode: Mode): Handler =>
  async (ctx, r) => {
    const page = await selectRunEntries(ctx, r);
    const workflowRuns = [];
    for (const x of page.items) workflowRuns.push(await recover(ctx, r, x, mode));
    reply(r.res, 200, page.cursor ? { workflowRuns, cursor: page.cursor } : { workflowRuns });
  };

/** POST /v2/workflows/dlq/{resume|restart}/{dlqId} → `{workflowRunId, workflowCreatedAt}`. */
const one =
  (mode: Mode): Handler =>
  async (ctx, r) => {
    reply(r.res, 200, await recover(ctx, r, await entryOf(ctx, r.segments[3]), mode));
  };

async function entryOf(ctx: QueueContext, segment: string | undefined): Promise<RunEntry> {
  const entry = await ctx.dlq.get(decode(segment ?? ""));
  if (!entry?.meta.workflow) throw notFound("workflow dlq message");
  return { entry, run: await ctx.workflows.get(entry.meta.workflow.runId) };
}

export const resumeMany = many("resume");
export const restartMany = many("restart");
export const resumeOne = one("resume");
export const restartOne = one("restart");

/**
 * POST /v2/workflows/dlq/callback/{dlqId}: sends the failed run's failure callback again
 * (docs/workflow.md §7) → `{workflowRunId, workflowCreatedAt}`.
 */
export const retryFailureCallback: Handler = async (ctx, r) => {
  const { entry, run } = await entryOf(ctx, r.segments[3]);
  const now = Date.now();
  const m = entry.meta;
  const callback = failureCallbackMessage(
    {
      meta: { ...baseMeta(m), depth: 0 },
      body: entry.body,
      result: {
        status: m.responseStatus,
        header: m.responseHeader,
        body: Buffer.from(m.responseBodyBase64, "base64"),
      },
      retried: m.maxRetries,
      now,
      maxDepth: ctx.config.queueMaxCallbackDepth,
    },
    m.dlqId,
  );
  if (!callback) throw new AppError("precondition_failed", "the run has no failure callback");
  // Like every message of the run, the callback lives in the run's partition.
  const part = await ctx.workflows.partitionOf(m.workflow?.runId ?? "");
  if (part) callback.meta.messageId = ctx.workflows.messageId(part, undefined);
  await ctx.messages.enqueue(now, [callback]);
  const failure = { state: "CALLBACK_INPROGRESS", messageId: callback.meta.messageId };
  await ctx.workflows.setFields(m.workflow?.runId ?? "", { failure: JSON.stringify(failure) });
  ctx.dispatcher.wake(now);
  reply(r.res, 200, { workflowRunId: m.workflow?.runId, workflowCreatedAt: run?.createdAt });
};
