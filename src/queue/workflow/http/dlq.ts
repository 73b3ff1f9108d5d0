import { AppError } from "../../../shared/errors.js";
import { filterFromQuery, matches } from "../../domain/filters.js";
import { renderDlq } from "../../domain/render.js";
import type { DlqEntry } from "../../store/dlq-store.js";
import type { Handler, QueueContext, QueueRequest } from "../../routes/context.js";
import { countParam, cursorParam, decode, multi, notFound, reply } from "../../routes/util.js";
import type { RunRecord } from "../state/run.js";

/** A failed run's DLQ entry with its run (undefined once the run record expired). */
export interface RunEntry {
  entry: DlqEntry;
  run: RunRecord | undefined;
}

/** The DLQ entries that stand for failed runs: one per run (§7); calls and callbacks excluded. */
export const isRunEntry = (e: DlqEntry): boolean =>
  e.meta.workflow !== undefined &&
  (e.meta.workflow.callType === "step" || e.meta.workflow.callType === "fromCallback");

/**
 * Run-level filters, matched once the run is loaded (docs/workflow.md §12). `workflowUrl` is an
 * exact URL, as the SDK documents for the DLQ; each key may repeat (any of its values matches).
 */
function runFilter(q: URLSearchParams): (x: RunEntry) => boolean {
  const urls = multi(q, "workflowUrl");
  const createdAts = multi(q, "workflowCreatedAt");
  const states = multi(q, "failureFunctionState");
  const anyOf = (wanted: string[], have: string | undefined) =>
    wanted.length === 0 || (have !== undefined && wanted.includes(have));
  return ({ entry, run }) =>
    anyOf(urls, run?.url ?? entry.meta.url) &&
    anyOf(createdAts, run ? String(run.createdAt) : undefined) &&
    anyOf(states, run?.failure?.state);
}

/**
 * Workflow DLQ entries selected by `dlqIds`, or a filtered page (count default and max 100,
 * `order`, cursor). Unknown query keys are refused like every bulk filter.
 */
export async function selectRunEntries(
  ctx: QueueContext,
  r: QueueRequest,
): Promise<{ items: RunEntry[]; cursor: string | undefined }> {
  const filter = filterFromQuery(r.query, "workflowDlq");
  const ids = multi(r.query, "dlqIds");
  if (r.query.has("dlqIds") && ids.length === 0) throw new AppError("bad_request", "empty dlqIds");
  let entries: DlqEntry[];
  let cursor: string | undefined;
  if (ids.length > 0) {
    entries = (await ctx.dlq.getAll(ids)).filter(isRunEntry);
  } else {
    const keep = (e: DlqEntry) =>
      isRunEntry(e) &&
      matches(filter, e.meta, { time: e.meta.failedAt, responseStatus: e.meta.responseStatus });
    const latestFirst = r.query.get("order") === "latestFirst";
    const page = await ctx.dlq.list(
      latestFirst,
      countParam(r.query, 100, 100),
      cursorParam(r.query),
      keep,
    );
    entries = page.items;
    cursor = page.cursor;
  }
  const withRuns = await Promise.all(
    entries.map(async (entry) => ({
      entry,
      run: await ctx.workflows.get(entry.meta.workflow?.runId ?? ""),
    })),
  );
  return { items: withRuns.filter(runFilter(r.query)), cursor };
}

/** A workflow DLQ message: the DLQ fields plus the run's (docs/workflow.md §12). */
export function renderRunEntry({ entry, run }: RunEntry): Record<string, unknown> {
  const m = entry.meta;
  const f = run?.failure;
  return {
    ...renderDlq(m, entry.body),
    workflowRunId: m.workflow?.runId,
    workflowUrl: run?.url ?? m.url,
    workflowCreatedAt: run?.createdAt ?? m.createdAt,
    ...(m.failureCallback ? { failureCallback: m.failureCallback } : {}),
    ...(f
      ? {
          failureFunctionState: f.state,
          failureCallbackInfo: {
            state: f.state,
            responseStatus: f.responseStatus,
            responseBody: f.responseBody,
            responseHeaders: f.responseHeaders,
          },
        }
      : {}),
  };
}

/** GET /v2/dlq?source=workflow and GET /v2/workflows/dlq → `{messages, cursor?}`. */
export const listWorkflowDlq: Handler = async (ctx, r) => {
  const page = await selectRunEntries(ctx, r);
  const messages = page.items.map(renderRunEntry);
  reply(r.res, 200, page.cursor ? { messages, cursor: page.cursor } : { messages });
};

async function oneEntry(ctx: QueueContext, r: QueueRequest): Promise<RunEntry> {
  const entry = await ctx.dlq.get(decode(r.segments[2] ?? ""));
  if (!entry || !isRunEntry(entry)) throw notFound("workflow dlq message");
  return { entry, run: await ctx.workflows.get(entry.meta.workflow?.runId ?? "") };
}

/** GET /v2/workflows/dlq/{dlqId}. */
export const getWorkflowDlq: Handler = async (ctx, r) => {
  reply(r.res, 200, renderRunEntry(await oneEntry(ctx, r)));
};

/** DELETE /v2/workflows/dlq/{dlqId}: 404 when gone. */
export const deleteWorkflowDlq: Handler = async (ctx, r) => {
  const { entry } = await oneEntry(ctx, r);
  await ctx.dlq.delete([entry.meta.dlqId]);
  reply(r.res, 200, { deleted: 1 });
};

/** DELETE /v2/workflows/dlq: ids, filters, or only count/cursor (all) → `{deleted, cursor?}`. */
export const deleteWorkflowDlqMany: Handler = async (ctx, r) => {
  const page = await selectRunEntries(ctx, r);
  const deleted = await ctx.dlq.delete(page.items.map((x) => x.entry.meta.dlqId));
  reply(r.res, 200, page.cursor ? { deleted, cursor: page.cursor } : { deleted });
};
