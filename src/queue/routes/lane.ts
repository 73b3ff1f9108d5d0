import type { Socket } from "node:net";
import { vouchFor } from "../../shared/http/connections.js";
import type { LaneHandler, LaneService } from "../../shared/http/lane.js";
import type { LaneRequest } from "../../shared/http/lane-parse.js";
import type { QueueContext } from "./context.js";
import { storePublish } from "./publish.js";
import { parseDestination } from "./publish-request.js";
import { enqueueTarget } from "./queues.js";
import { findRoute, parseTarget, sendFailure, tokenMatches, type Target } from "./router.js";
import { isWorkflowPublish } from "../workflow/engine/produce.js";

/**
 * The queue's requests on the fast lane in front of node:http (shared/http/lane.ts, QUEUE_SHAPE):
 * `POST /v2/publish/...` and `POST /v2/enqueue/...`, read whole. Served as the router serves them
 * (the same route match, token, writability check, destination and queue-name parsing, storePublish
 * and error answers, with the CORS headers first as `Cors.wrap` sets them); declined (false,
 * nothing written, node:http then serves the request) whenever the router would refuse it before
 * reading its body (no or a wrong token, no such route, the store not writable), when the body is
 * over the message size or the body budget, and for a workflow publish, so those answers stay
 * node:http's (docs/decisions.md, "Queue publishes on the fast lane"). `admit` answers the same
 * for a publish whose body is still arriving, and counts that body in the budget meanwhile.
 *
 * `token` is asked once per request, as by the router (a reloaded token applies at once).
 */
export function createQueueLane(
  ctx: QueueContext,
  token: () => string,
  corsLines: string,
): Pick<LaneService, "take" | "admit"> {
  const take: LaneHandler = (req, res) => {
    const length = req.body.length;
    const taken = laneable(ctx, token(), req, length);
    if (taken === undefined || !ctx.bodies.take(length)) return false;
    vouchFor(res.socket);
    res.hold(() => ctx.bodies.give(length));
    res.label = { label: taken.label, unverified: false };
    res.leadingLines = corsLines;
    const parts = {
      query: taken.query,
      headers: req.headers,
      callerIP: res.socket.remoteAddress,
      res,
    };
    storePublish(ctx, parts, taken.to, req.body, taken.queue)
      .catch((err: unknown) => sendFailure(ctx, res, err, req.target))
      .then(
        () => res.done(),
        () => res.done(),
      );
    return true;
  };
  // A body still arriving is counted from the head, as node:http's route counts it.
  const admit = (head: LaneRequest, length: number, socket: Socket): (() => void) | undefined => {
    if (laneable(ctx, token(), head, length) === undefined || !ctx.bodies.take(length))
      return undefined;
    vouchFor(socket);
    return () => ctx.bodies.give(length);
  };
  return { take, admit };
}

/**
 * The publish `req` (with a body of `length` bytes) is, when the lane may take it: the token
 * given, a publish or enqueue the router would read the body of (publishOf), a body within the
 * message size. The body budget aside: the caller takes it.
 */
function laneable(
  ctx: QueueContext,
  token: string,
  req: LaneRequest,
  length: number,
): (LanePublish & { query: URLSearchParams }) | undefined {
  const target = parseTarget(req.target);
  if (!tokenMatches(req.authorization, target.query, token)) return undefined;
  const taken = publishOf(ctx, target, req);
  if (taken === undefined || length > ctx.config.queueMaxMessageBytes) return undefined;
  return { ...taken, query: target.query };
}

/** A publish or enqueue the lane takes: its route's label, destination and FIFO queue. */
interface LanePublish {
  label: string;
  to: { destination: string; group?: string };
  queue: string | undefined;
}

/**
 * The publish or enqueue `req` is, when the router would go on to read its body; undefined for
 * anything it would refuse first (no such route, the store not writable, a bad destination or
 * queue name: refused before the body is read, node:http's answer closes the connection), or that
 * is not a plain publish or enqueue.
 */
function publishOf(ctx: QueueContext, target: Target, req: LaneRequest): LanePublish | undefined {
  try {
    const { route, segments, rawPath } = findRoute("POST", target.rawPathFull);
    const label = route[0];
    const rawQuery = target.rawQuery;
    if (label === ENQUEUE) {
      const { queue, target: rest } = enqueueTarget({ segments, rawPath, rawQuery });
      ctx.safety.assertWritable();
      return { label, to: parseDestination(rest), queue };
    }
    if (label !== PUBLISH || isWorkflowPublish(req.headers)) return undefined;
    ctx.safety.assertWritable();
    return { label, to: parseDestination({ rawPath, rawQuery }), queue: undefined };
  } catch {
    return undefined;
  }
}

const PUBLISH = "POST publish **";
const ENQUEUE = "POST enqueue * **";
