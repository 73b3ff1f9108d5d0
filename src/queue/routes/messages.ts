import { AppError } from "../../shared/errors.js";
import { nextTurn } from "../../shared/time-slice.js";
import {
  filterFromJson,
  filterFromQuery,
  isEmpty,
  matches,
  type Filter,
} from "../domain/filters.js";
import { renderMessage } from "../domain/render.js";
import type { PendingEntry } from "../store/message-store.js";
import type { Handler, QueueContext, QueueRequest } from "./context.js";
import { countParam, decode, multi, notFound, readJsonObject, reply, stringList } from "./util.js";

/** Ids read from the pending set at a time, and filtered and cancelled at a time (cancelMany). */
const PAGE = 1000;
const CHUNK = 500;

/** GET /v2/messages/{id}: pending or in-flight messages only (finished ones are gone: 404). */
export const getMessage: Handler = async (ctx, r) => {
  const m = await ctx.messages.get(decode(r.segments[1] ?? ""));
  if (!m) throw notFound("message");
  reply(r.res, 200, renderMessage(m.meta, m.body));
};

/** DELETE /v2/messages/{id} → `{"cancelled":1}`; 404 when unknown or already finished. */
export const cancelMessage: Handler = async (ctx, r) => {
  const n = await cancel(ctx, [decode(r.segments[1] ?? "")]);
  if (n === 0) throw notFound("message");
  reply(r.res, 200, { cancelled: n });
};

/**
 * DELETE /v2/messages (docs/qstash-protocol.md §2.4): ids (query `messageIds` or JSON
 * `{"messageIds": [...]}`), or filters (query or JSON); nothing at all (PY/GO) or only `count`
 * (JS `{all: true}`) = every message. A `count` (query or JSON) cancels at most that many of the
 * matching messages, oldest first (the JS SDK sends 100 and calls again until `cancelled` is 0).
 * Unknown or empty filter keys are refused (domain/filters.ts), never read as "all".
 */
export const cancelMany: Handler = async (ctx, r) => {
  const json = await readJsonObject(ctx, r);
  const filter = json ? filterFromJson(json, "messages") : filterFromQuery(r.query, "messages");
  const ids = [...multi(r.query, "messageIds"), ...stringList(json?.["messageIds"])];
  const idsGiven = r.query.has("messageIds") || json?.["messageIds"] !== undefined;
  if (idsGiven && ids.length === 0) throw new AppError("bad_request", "empty messageIds");
  if (ids.length > 0) {
    reply(r.res, 200, { cancelled: await cancel(ctx, ids) });
    return;
  }
  reply(r.res, 200, { cancelled: await cancelMatching(ctx, filter, countOf(r, json)) });
};

/** The bulk cancel's `count`: unlimited when absent; a positive integer otherwise (else 400). */
function countOf(r: QueueRequest, json: Record<string, unknown> | undefined): number {
  const fromJson = json?.["count"];
  if (fromJson !== undefined && fromJson !== null && !r.query.has("count")) {
    return countParam(new URLSearchParams({ count: String(fromJson) }), Infinity, Infinity);
  }
  return countParam(r.query, Infinity, Infinity);
}

/**
 * Walks the pending set a page of PAGE ids at a time (oldest first, stored before the request
 * began), with a turn of the event loop between pages: memory and each stretch of work are
 * bounded by the page, however many messages are pending. Each page is filtered and cancelled in
 * chunks until `count` are cancelled.
 */
async function cancelMatching(ctx: QueueContext, filter: Filter, count: number): Promise<number> {
  const until = Date.now();
  let cancelled = 0;
  let after: PendingEntry | undefined;
  while (cancelled < count) {
    const page = await ctx.messages.pendingPage(after, PAGE, until);
    if (page.length === 0) break;
    after = page[page.length - 1];
    for (let i = 0; i < page.length && cancelled < count; i += CHUNK) {
      const chunk = page.slice(i, i + CHUNK).map(([id]) => id);
      cancelled += await cancelPicked(ctx, await picked(ctx, filter, chunk), count - cancelled);
    }
    await nextTurn();
  }
  return cancelled;
}

/** The ids of `chunk` whose messages match `filter` (all of them for no filter). */
async function picked(ctx: QueueContext, filter: Filter, chunk: string[]): Promise<string[]> {
  if (isEmpty(filter)) return chunk;
  return (await ctx.messages.getMany(chunk))
    .filter((m) => matches(filter, m.meta, { time: m.meta.createdAt, state: m.state }))
    .map((m) => m.meta.messageId);
}

/**
 * Cancels up to `most` of `ids`, in order. Some may be cancelled already (not counted again):
 * the rest are taken in steps until `most` are.
 */
async function cancelPicked(ctx: QueueContext, ids: string[], most: number): Promise<number> {
  let cancelled = 0;
  for (let j = 0; j < ids.length && cancelled < most;) {
    const step = ids.slice(j, j + (most - cancelled));
    j += step.length;
    cancelled += await cancel(ctx, step);
  }
  return cancelled;
}

/**
 * Cancels the messages (store/lua cancel) and aborts this process's attempts of those in flight,
 * which then finish as CANCELED and free their slots; other processes holding one abort it at
 * their next lease renewal.
 */
async function cancel(ctx: QueueContext, ids: readonly string[]): Promise<number> {
  const n = await ctx.messages.cancel(Date.now(), ids);
  ctx.dispatcher.cancel(ids);
  return n;
}
