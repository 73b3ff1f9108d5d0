import { AppError } from "../../shared/errors.js";
import {
  filterFromJson,
  filterFromQuery,
  isEmpty,
  matches,
  type Filter,
} from "../domain/filters.js";
import { renderMessage } from "../domain/render.js";
import type { Handler, QueueContext, QueueRequest } from "./context.js";
import { countParam, decode, multi, notFound, readJsonObject, reply, stringList } from "./util.js";

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

async function cancelMatching(ctx: QueueContext, filter: Filter, count: number): Promise<number> {
  const all = await ctx.messages.pendingIds();
  let cancelled = 0;
  for (let i = 0; i < all.length && cancelled < count; i += CHUNK) {
    const chunk = all.slice(i, i + CHUNK);
    const picked = isEmpty(filter)
      ? chunk
      : (await ctx.messages.getMany(chunk))
          .filter((m) => matches(filter, m.meta, { time: m.meta.createdAt, state: m.state }))
          .map((m) => m.meta.messageId);
    // Some picked ones may already be cancelled (not counted again): take the rest of the chunk
    // in steps until `count` is reached.
    for (let j = 0; j < picked.length && cancelled < count;) {
      const step = picked.slice(j, j + (count - cancelled));
      j += step.length;
      cancelled += await cancel(ctx, step);
    }
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
