import { AppError } from "../../shared/errors.js";
import { baseMeta, retriedMeta } from "../domain/build.js";
import { filterFromJson, filterFromQuery, matches, type Filter } from "../domain/filters.js";
import { parsePublishOptions } from "../domain/publish-options.js";
import { renderDlq } from "../domain/render.js";
import type { DlqEntry } from "../store/dlq-store.js";
import type { Handler, QueueContext, QueueRequest } from "./context.js";
import { listWorkflowDlq } from "../workflow/http/dlq.js";
import { configValues } from "./publish-request.js";
import {
  countParam,
  cursorParam,
  decode,
  multi,
  notFound,
  readJsonObject,
  reply,
  stringList,
} from "./util.js";

/** Workflow runs' entries are listed only with `source=workflow` (docs/workflow.md §13). */
const keepBy = (f: Filter) => (e: DlqEntry) =>
  !e.meta.workflow &&
  matches(f, e.meta, { time: e.meta.failedAt, responseStatus: e.meta.responseStatus });

/** The `dlqIds` named (query or JSON); [] when none; 400 when named empty. */
function idsOf(r: QueueRequest, json?: Record<string, unknown>): string[] {
  const ids = [...multi(r.query, "dlqIds"), ...stringList(json?.["dlqIds"])];
  const idsGiven = r.query.has("dlqIds") || json?.["dlqIds"] !== undefined;
  if (idsGiven && ids.length === 0) throw new AppError("bad_request", "empty dlqIds");
  return ids;
}

/**
 * The entries of `dlqIds` a step at a time (DlqStore.getMany: a body may name 30,000, whose
 * entries hold up to a message each), or one filtered page (count default/max 100, order, cursor).
 */
async function* selected(
  ctx: QueueContext,
  r: QueueRequest,
  json: Record<string, unknown> | undefined,
  page: (p: { cursor?: string | undefined }) => void,
): AsyncGenerator<DlqEntry[]> {
  const ids = idsOf(r, json);
  if (ids.length > 0) {
    yield* ctx.dlq.getMany(ids);
    return;
  }
  const found = await select(ctx, r, json);
  page(found);
  yield found.items;
}

/** A filtered page (count default/max 100, order, cursor); `dlqIds` only from the query. */
async function select(ctx: QueueContext, r: QueueRequest, json?: Record<string, unknown>) {
  const filter = json ? filterFromJson(json, "dlq") : filterFromQuery(r.query, "dlq");
  const ids = idsOf(r, json);
  if (ids.length > 0) return { items: await ctx.dlq.getAll(ids), cursor: undefined };
  const latestFirst = r.query.get("order") === "latestFirst";
  const count = countParam(r.query, 100, 100);
  return ctx.dlq.list(latestFirst, count, cursorParam(r.query), keepBy(filter));
}

/** GET /v2/dlq → `{messages, cursor?}`. */
export const listDlq: Handler = async (ctx, r) => {
  if (r.query.get("source") === "workflow") return listWorkflowDlq(ctx, r);
  const page = await select(ctx, r);
  const messages = page.items.map((e) => renderDlq(e.meta, e.body));
  reply(r.res, 200, page.cursor ? { messages, cursor: page.cursor } : { messages });
};

export const getDlq: Handler = async (ctx, r) => {
  const e = await ctx.dlq.get(decode(r.segments[1] ?? ""));
  if (!e) throw notFound("dlq message");
  reply(r.res, 200, renderDlq(e.meta, e.body));
};

export const deleteDlq: Handler = async (ctx, r) => {
  if ((await ctx.dlq.delete([decode(r.segments[1] ?? "")])) === 0) throw notFound("dlq message");
  reply(r.res, 200);
};

/**
 * DELETE /v2/dlq: ids (query or JSON: deleted as named, a step at a time, without reading the
 * entries), or a filtered page → `{deleted, cursor?}`.
 */
export const deleteDlqMany: Handler = async (ctx, r) => {
  const json = await readJsonObject(ctx, r);
  const ids = idsOf(r, json);
  if (ids.length > 0) {
    reply(r.res, 200, { deleted: await ctx.dlq.delete(ids) });
    return;
  }
  const page = await select(ctx, r, json);
  const deleted = await ctx.dlq.delete(page.items.map((e) => e.meta.dlqId));
  reply(r.res, 200, page.cursor ? { deleted, cursor: page.cursor } : { deleted });
};

/** POST /v2/dlq/retry/{dlqId} → 201 `{messageId}`; request publish headers override. */
export const retryDlqOne: Handler = async (ctx, r) => {
  const e = await ctx.dlq.get(decode(r.segments[2] ?? ""));
  if (!e) throw notFound("dlq message");
  const messageId = await retryEntry(ctx, r, e);
  reply(r.res, 201, { messageId });
};

/** POST /v2/dlq/retry → `{responses: [{messageId}], cursor?}`. */
export const retryDlqMany: Handler = async (ctx, r) => {
  let cursor: string | undefined;
  const responses = [];
  const steps = selected(ctx, r, await readJsonObject(ctx, r), (p) => (cursor = p.cursor));
  for await (const step of steps) {
    for (const e of step) responses.push({ messageId: await retryEntry(ctx, r, e) });
  }
  reply(r.res, 201, cursor ? { cursor, responses } : { responses });
};

async function retryEntry(ctx: QueueContext, r: QueueRequest, e: DlqEntry): Promise<string> {
  const now = Date.now();
  const cfg = configValues(r);
  cfg.delete("content-type");
  const opts = parsePublishOptions(cfg, {}, now, ctx.config);
  const id = ctx.messages.idBeside(e.meta.messageId);
  const meta = retriedMeta(baseMeta(e.meta), cfg, opts, now, id);
  const ok = await ctx.messages.retryDlq(now, e.meta.dlqId, {
    meta,
    body: e.body,
    dueAt: opts.dueAt,
  });
  if (!ok) throw new AppError("not_found", "dlq message not found");
  ctx.dispatcher.wake(opts.dueAt);
  return meta.messageId;
}
