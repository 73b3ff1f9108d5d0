import type { Handler } from "./context.js";
import { decode, notFound, reply } from "./util.js";

/** GET /v2/flowControl (`?search=<substring>`, spec 2.11): FlowControlInfo[] by key. */
export const listFlowControl: Handler = async (ctx, r) => {
  const search = r.query.get("search") ?? undefined;
  reply(r.res, 200, await ctx.flowControl.list(Date.now(), search));
};

/** GET /v2/flowControl/{key}: FlowControlInfo; 404 for a key no message used. */
export const getFlowControl: Handler = async (ctx, r) => {
  const info = await ctx.flowControl.get(decode(r.segments[1] ?? ""), Date.now());
  if (!info) throw notFound("flow control key");
  reply(r.res, 200, info);
};
