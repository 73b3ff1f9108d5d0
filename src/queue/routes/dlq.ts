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

/** Entries selected by `dlqIds`, or a filtered page (count default/max 100, order, cursor). */
async function select(ctx: QueueContext, r: QueueRequest, json?: Record<string, unknown>) {
  const filter = json ? filterFromJson(json, "dlq") : filterFromQuery(r.query, "dlq");
  const ids = [...multi(r.query, "dlqIds"), ...stringList(json?.["dlqIds"])];
  const idsGiven = r.query.has("dlqIds") || json?.["dlqIds"] !== undefined;
  if (idsGiven && ids.length === 0) throw new AppError("bad_request", "empty dlqIds");
  if (ids.length > 0) {
    const entries = await Promise.all(ids.map((id) => ctx.dlq.get(id)));
    return { items: entries.filter((e): e is DlqEntry => e !== undefined), cursor: undefined };
  }
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

/** DELETE /v2/dlq: ids (query or JSON), or a filtered page → `{deleted, cursor?}`. */
export const deleteDlqMany: Handler = async (ctx, r) => {
  const page = await select(ctx, r, await readJsonObject(ctx, r));
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
  const page = await select(ctx, r, await readJsonObject(ctx, r));
  const responses = [];
  for (const e of page.items) responses.push({ messageId: await retryEntry(ctx, r, e) });
  reply(r.res, 201, page.cursor ? { cursor: page.cursor, responses } : { responses });
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
