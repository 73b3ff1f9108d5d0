import { AppError } from "../../shared/errors.js";
import type { FlowControlAction } from "../store/flow-control-store.js";
import type { Handler } from "./context.js";
import { decode, notFound, reply } from "./util.js";

/**
 * GET /v2/flowControl (`?search=<substring>`, docs/qstash-protocol.md §2.11): FlowControlInfo[] by
 * key.
 */
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

/** POST /v2/flowControl/{key}/{pause|resume|resetRate|reset|pin|unpin}: 200 empty; 404 unknown. */
export const manageFlowControl: Handler = async (ctx, r) => {
  const key = decode(r.segments[1] ?? "");
  const verb = (r.segments[2] ?? "").toLowerCase();
  const n = await ctx.flowControl.manage(key, Date.now(), actionOf(verb, r.query));
  if (n === undefined) throw notFound("flow control key");
  if (n > 0) ctx.dispatcher.wake();
  reply(r.res, 200);
};

/** GET /v2/globalParallelism: no global limit (0); the count is every delivery in flight. */
export const globalParallelism: Handler = async (ctx, r) => {
  reply(r.res, 200, { parallelismMax: 0, parallelismCount: await ctx.flowControl.activeCount() });
};

function actionOf(verb: string, q: URLSearchParams): FlowControlAction {
  if (verb === "resetrate") return { action: "resetRate" };
  if (verb === "pause" || verb === "resume" || verb === "reset") return { action: verb };
  if (verb === "unpin") {
    return { action: "unpin", parallelism: flag(q, "parallelism"), rate: flag(q, "rate") };
  }
  const period = int(q, "period");
  if (period !== undefined && period > WEEK_S) throw invalid("period", String(period));
  return { action: "pin", parallelism: int(q, "parallelism"), rate: int(q, "rate"), period };
}

function flag(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  if (v === null || v === "false") return false;
  if (v === "true") return true;
  throw invalid(name, v);
}

/** A positive integer query parameter; undefined when absent, 400 when invalid. */
function int(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === "") return undefined;
  if (!/^\d+$/.test(v) || Number(v) < 1) throw invalid(name, v);
  return Number(v);
}

const WEEK_S = 7 * 86_400;

function invalid(name: string, v: string): AppError {
  return new AppError("bad_request", `invalid ${name}: ${JSON.stringify(v)}`);
}
