import { AppError } from "../../../shared/errors.js";
import type { Handler, QueueContext } from "../../routes/context.js";
import { parseItems, submission } from "../../routes/batch.js";
import { decode, readRaw, reply } from "../../routes/util.js";
import { produceWorkflow } from "../engine/produce.js";
import { IN } from "../engine/protocol.js";
import type { FailureOutcome } from "../state/run.js";
import { runIdOf, triggerConfig } from "./trigger.js";

/**
 * Endpoints of Upstash's workflow REST API that no SDK sends (docs/workflow.md §14, §16):
 * the batch trigger and the cancel of an in-progress failure callback.
 */

/** The batch trigger's items: a non-empty JSON array (400 otherwise). */
function batchItems(ctx: QueueContext, raw: Buffer): unknown[] {
  const items = parseItems(ctx, raw);
  if (items.length === 0) throw new AppError("bad_request", "batch trigger body is an empty array");
  return items;
}

/**
 * POST /v2/batch/trigger: `[{destination, body?, headers?}]`, each item started as
 * `POST /v2/trigger/{destination}` would with its headers; the runs are stored in one batch.
 * Answers 200 `[{workflowRunId, workflowCreatedAt, deduplicated}]` in request order (an active
 * run id gives `deduplicated: true` and creates nothing, where the single trigger answers 409).
 */
export const batchTrigger: Handler = async (ctx, r) => {
  const items = batchItems(ctx, await readRaw(ctx, r));
  const subs = items.map((item) => {
    const sub = submission(r, item);
    if (sub.group !== undefined) {
      throw new AppError("bad_request", "the workflow trigger needs a URL destination");
    }
    const cfg = sub.config();
    const runId = runIdOf(cfg.get(IN.runId));
    const url = cfg.get(IN.url) ?? sub.destination;
    return { runId, sub: { ...sub, config: () => triggerConfig(cfg, runId, url) } };
  });
  const results = await produceWorkflow(
    ctx,
    subs.map((s) => s.sub),
    { restTrigger: true },
  );
  const out = [];
  for (const [i, { runId }] of subs.entries()) {
    const createdAt = (await ctx.workflows.createdAt(runId)) ?? Date.now();
    const deduplicated = results[i]?.deduplicated === true;
    out.push({ workflowRunId: runId, workflowCreatedAt: createdAt, deduplicated });
  }
  reply(r.res, 200, out);
};

/**
 * DELETE /v2/workflows/dlq/callback/{dlqId}: cancels the failed run's failure callback while it
 * is in progress (queued or waiting for a retry); its state becomes `CALLBACK_CANCELED`. 400 when
 * no callback of that run is in progress, 404 for an unknown DLQ entry. An attempt already in
 * flight still finishes and records its outcome.
 */
export const cancelFailureCallback: Handler = async (ctx, r) => {
  const entry = await ctx.dlq.get(decode(r.segments[3] ?? ""));
  const runId = entry?.meta.workflow?.runId;
  if (!entry || runId === undefined)
    throw new AppError("not_found", "workflow dlq message not found");
  const run = await ctx.workflows.get(runId);
  const f = run?.failure;
  if (f?.state !== "CALLBACK_INPROGRESS" || f.messageId === undefined) {
    throw new AppError("bad_request", "no failure callback in progress for this DLQ message");
  }
  await ctx.messages.cancel(Date.now(), [f.messageId]);
  const canceled: FailureOutcome = { state: "CALLBACK_CANCELED", messageId: f.messageId };
  await ctx.workflows.setFields(runId, { failure: JSON.stringify(canceled) });
  reply(r.res, 200, { workflowRunId: runId, workflowCreatedAt: run?.createdAt });
};
