import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { AppError, isAppError } from "../../shared/errors.js";
import { vouchFor } from "../../shared/http/connections.js";
import { closingIfUnread, sendError, type ReplySink } from "../../shared/http/respond.js";
import { labelRequest } from "../../shared/instrument.js";
import type { Handler, QueueContext, QueueRequest } from "./context.js";
import * as dlq from "./dlq.js";
import { getKeys, rotateKeys } from "./signing-keys.js";
import * as flow from "./flow-control.js";
import { listLogs } from "./logs.js";
import { cancelMany, cancelMessage, getMessage } from "./messages.js";
import { publish } from "./publish.js";
import * as queues from "./queues.js";
import { batch } from "./batch.js";
import * as schedules from "./schedules.js";
import * as topics from "./topics.js";
import { isPublicPath, WORKFLOW_ROUTES } from "../workflow/http/routes.js";

/**
 * Route table: `METHOD pattern` over the path segments after `/v2/`, matched case-insensitively
 * (the Go SDK sends `/v2/Schedules`); `*` is one segment, `**` the raw rest. A trailing slash
 * (empty last segment) is the collection route (docs/qstash-protocol.md §0.1).
 */
const ROUTES: [string, Handler][] = [
  ["POST publish **", publish],
  ["POST enqueue * **", queues.enqueue],
  ["POST batch", batch],
  ["POST queues", queues.upsertQueue],
  ["GET queues", queues.listQueues],
  ["GET queues *", queues.getQueue],
  ["DELETE queues *", queues.deleteQueue],
  ["POST queues * pause", queues.pauseQueue],
  ["POST queues * resume", queues.resumeQueue],
  ["GET messages *", getMessage],
  ["DELETE messages *", cancelMessage],
  ["DELETE messages", cancelMany],
  ["GET dlq", dlq.listDlq],
  ["DELETE dlq", dlq.deleteDlqMany],
  ["POST dlq retry", dlq.retryDlqMany],
  ["POST dlq retry *", dlq.retryDlqOne],
  ["GET dlq *", dlq.getDlq],
  ["DELETE dlq *", dlq.deleteDlq],
  ["POST topics * endpoints", topics.addEndpoints],
  ["DELETE topics * endpoints", topics.removeEndpoints],
  ["GET topics", topics.listTopics],
  ["GET topics *", topics.getTopic],
  ["DELETE topics *", topics.deleteTopic],
  ["PATCH topics *", topics.patchTopic],
  ["PATCH schedules * pause", schedules.pauseSchedule],
  ["POST schedules * pause", schedules.pauseSchedule],
  ["PATCH schedules * resume", schedules.resumeSchedule],
  ["POST schedules * resume", schedules.resumeSchedule],
  ["POST schedules **", schedules.createSchedule],
  ["GET schedules", schedules.listSchedules],
  ["GET schedules *", schedules.getSchedule],
  ["DELETE schedules *", schedules.deleteSchedule],
  ["GET flowcontrol", flow.listFlowControl],
  ["GET flowcontrol *", flow.getFlowControl],
  ["POST flowcontrol * pause", flow.manageFlowControl],
  ["POST flowcontrol * resume", flow.manageFlowControl],
  ["POST flowcontrol * pin", flow.manageFlowControl],
  ["POST flowcontrol * unpin", flow.manageFlowControl],
  ["POST flowcontrol * resetrate", flow.manageFlowControl],
  ["POST flowcontrol * reset", flow.manageFlowControl],
  ["GET globalparallelism", flow.globalParallelism],
  ["GET events", listLogs],
  ["GET logs", listLogs],
  ["GET keys", getKeys],
  ["POST keys rotate", rotateKeys],
  ["POST rotate", rotateKeys],
  ...WORKFLOW_ROUTES,
];

function match(pattern: string, method: string, segments: string[]): boolean {
  const [m, ...parts] = pattern.split(" ");
  if (m !== method) return false;
  for (const [i, part] of parts.entries()) {
    if (part === "**") return segments.length > i && (segments[i] ?? "") !== "";
    const seg = segments[i];
    if (seg === undefined || seg === "") return false;
    if (part !== "*" && seg.toLowerCase() !== part) return false;
  }
  return segments.length === parts.length;
}

/**
 * The queue's HTTP handler. `token` is asked once per request, so a token reloaded from the
 * credentials file (`stashd queue reset-token`) applies from the next request on.
 */
export function createQueueHandler(ctx: QueueContext, token: () => string) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    // An error before the body was read (no token, no route, a bad header) leaves it unread:
    // the answer closes the connection instead of reading the body (closingIfUnread).
    handle(ctx, token(), req, res).catch((err: unknown) => {
      sendFailure(ctx, res, err, req.url, closingIfUnread(req));
    });
  };
}

/** The answer to a request that failed (its error's JSON); a hop limit is also logged. */
export function sendFailure(
  ctx: QueueContext,
  res: ReplySink,
  err: unknown,
  url: string | undefined,
  headers?: Record<string, string>,
): void {
  if (isAppError(err) && err.code === "hop_limit") ctx.log.warn(err.message, { url });
  sendError(res, err, ctx.log, headers);
}

async function handle(
  ctx: QueueContext,
  token: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const target = parseTarget(req.url ?? "/");
  if (!isPublicPath(target.rawPathFull)) {
    authorize(req.headers.authorization, target.query, token);
    vouchFor(req.socket);
  }
  const method = (req.method ?? "GET").toUpperCase();
  const { route, segments, rawPath } = findRoute(method, target.rawPathFull);
  labelRequest(req, route[0]);
  // While the queue's Redis may lose what it acknowledges, nothing new is accepted; reads and
  // deletions still answer.
  if (method !== "GET" && method !== "DELETE") ctx.safety.assertWritable();
  const { rawQuery, query } = target;
  const r: QueueRequest = {
    req,
    res,
    headers: req.headers,
    method,
    segments,
    rawPath,
    rawQuery,
    query,
  };
  await route[1](ctx, r);
}

/** A request target split as the routes read it: raw path and query kept as sent. */
export interface Target {
  /** The path with its `/v2/` prefix. */
  rawPathFull: string;
  rawQuery: string;
  query: URLSearchParams;
}

export function parseTarget(url: string): Target {
  const q = url.indexOf("?");
  const rawQuery = q === -1 ? "" : url.slice(q + 1);
  return {
    rawPathFull: q === -1 ? url : url.slice(0, q),
    rawQuery,
    query: new URLSearchParams(rawQuery),
  };
}

/** The route of `METHOD path`, with the path after `/v2/` and its segments; 404 for none. */
export function findRoute(
  method: string,
  rawPathFull: string,
): { route: [string, Handler]; segments: string[]; rawPath: string } {
  if (!/^\/v2\//i.test(rawPathFull)) throw new AppError("not_found", "not found");
  const rawPath = rawPathFull.slice(4);
  const segments = rawPath.split("/");
  if (segments.length > 1 && segments[segments.length - 1] === "") segments.pop();
  const route = ROUTES.find(([pattern]) => match(pattern, method, segments));
  if (!route) throw new AppError("not_found", `no route for ${method} /v2/${rawPath}`);
  return { route, segments, rawPath };
}

/**
 * The token a request gives: `Authorization: Bearer <token>`, else `?qstash_token=`; empty for
 * none.
 */
function givenToken(header: string | undefined, query: URLSearchParams): string {
  const value = header ?? "";
  return /^bearer\s+/i.test(value)
    ? value.replace(/^bearer\s+/i, "").trim()
    : (query.get("qstash_token") ?? "");
}

/** Whether a request gives the token (givenToken), compared in constant time. */
export function tokenMatches(
  header: string | undefined,
  query: URLSearchParams,
  token: string,
): boolean {
  const a = Buffer.from(givenToken(header, query));
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** `Authorization: Bearer <token>` or `?qstash_token=`; 401 JSON error otherwise. */
function authorize(header: string | undefined, query: URLSearchParams, token: string): void {
  if (tokenMatches(header, query, token)) return;
  const given = givenToken(header, query);
  throw new AppError("unauthorized", given === "" ? "missing token" : "invalid token");
}
