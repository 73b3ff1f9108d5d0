import {
  filterFromJson,
  filterFromQuery,
  isEmpty,
  matches,
  type Filter,
} from "../domain/filters.js";
import { renderMessage } from "../domain/render.js";
import type { Handler, QueueContext } from "./context.js";
import { decode, multi, notFound, readJsonObject, reply, stringList } from "./util.js";

const CHUNK = 500;

/** GET /v2/messages/{id}: pending or in-flight messages only (finished ones are gone: 404). */
export const getMessage: Handler = async (ctx, r) => {
  const m = await ctx.messages.get(decode(r.segments[1] ?? ""));
  if (!m) throw notFound("message");
  reply(r.res, 200, renderMessage(m.meta, m.body));
};

/** DELETE /v2/messages/{id} → `{"cancelled":1}`; 404 when unknown or already finished. */
export const cancelMessage: Handler = async (ctx, r) => {
  const n = await ctx.messages.cancel(Date.now(), [decode(r.segments[1] ?? "")]);
  if (n === 0) throw notFound("message");
  reply(r.res, 200, { cancelled: n });
};

/**
 * DELETE /v2/messages (spec 2.4): ids (query `messageIds` or JSON `{"messageIds": [...]}`), or
 * filters (query or JSON), or nothing at all = cancel everything.
 */
export const cancelMany: Handler = async (ctx, r) => {
  const json = await readJsonObject(ctx, r);
  const ids = [...multi(r.query, "messageIds"), ...stringList(json?.["messageIds"])];
  if (ids.length > 0) {
    reply(r.res, 200, { cancelled: await ctx.messages.cancel(Date.now(), ids) });
    return;
  }
  const filter = json ? filterFromJson(json) : filterFromQuery(r.query);
  // `count` is legacy and ignored: a filter cancels every matching message (as the SDK documents).
  reply(r.res, 200, { cancelled: await cancelMatching(ctx, filter) });
};

async function cancelMatching(ctx: QueueContext, filter: Filter): Promise<number> {
  const all = await ctx.messages.pendingIds();
  let cancelled = 0;
  for (let i = 0; i < all.length; i += CHUNK) {
    const chunk = all.slice(i, i + CHUNK);
    const picked = isEmpty(filter)
      ? chunk
      : (await ctx.messages.getMany(chunk))
          .filter((m) => matches(filter, m.meta, { time: m.meta.createdAt, state: m.state }))
          .map((m) => m.meta.messageId);
    cancelled += await ctx.messages.cancel(Date.now(), picked);
  }
  return cancelled;
}
