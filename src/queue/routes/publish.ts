import { sendJson, type ReplySink } from "../../shared/http/respond.js";
import type { Handler, QueueContext, QueueRequest } from "./context.js";
import { configValues, parseDestination } from "./publish-request.js";
import { submit } from "./submit.js";
import { readRaw } from "./util.js";
import { isWorkflowPublish } from "../workflow/engine/produce.js";
import { publishWorkflow } from "../workflow/http/routes.js";

/**
 * POST /v2/publish/{destination} (docs/qstash-protocol.md §2.1): to a URL (raw in the path, plus
 * the destination's own query string) or a URL group (fan-out, bare array response). 201 when
 * stored; a duplicate within the dedup window gets 202 with the first publish's ids and
 * `deduplicated: true`.
 */
export const publish: Handler = (ctx, r) =>
  isWorkflowPublish(r.headers) ? publishWorkflow(ctx, r) : submitRequest(ctx, r, r);

/**
 * Stores the request's body as a publish to the destination named by `target`'s path (the
 * request itself, or its path after `enqueue/<queue>/`), into the FIFO `queue` when given.
 */
export async function submitRequest(
  ctx: QueueContext,
  r: QueueRequest,
  target: Pick<QueueRequest, "rawPath" | "rawQuery">,
  queue?: string,
): Promise<void> {
  const to = parseDestination(target);
  const body = await readRaw(ctx, r);
  await storePublish(ctx, { ...r, callerIP: r.req.socket.remoteAddress }, to, body, queue);
}

/** What storePublish reads of a publish request, from node:http or the fast lane (lane.ts). */
export interface PublishParts {
  query: URLSearchParams;
  headers: QueueRequest["headers"];
  callerIP: string | undefined;
  res: ReplySink;
}

/** Stores a publish (or, with `queue`, an enqueue) whose body is read, and answers it. */
export async function storePublish(
  ctx: QueueContext,
  p: PublishParts,
  to: { destination: string; group?: string },
  body: Buffer,
  queue: string | undefined,
): Promise<void> {
  const result = await submit(ctx, {
    destination: to.destination,
    group: to.group,
    config: (defaults) => configValues(p, defaults),
    requestHeaders: p.headers,
    body,
    ...(queue === undefined ? {} : { queue }),
    callerIP: p.callerIP,
  });
  sendJson(p.res, result.status, JSON.stringify(result.value));
}
