import type { Handler, QueueContext, QueueRequest } from "./context.js";
import { configValues, parseDestination } from "./publish-request.js";
import { submit } from "./submit.js";
import { readRaw, reply } from "./util.js";
import { isWorkflowPublish } from "../workflow/engine/produce.js";
import { publishWorkflow } from "../workflow/http/routes.js";

/**
 * POST /v2/publish/{destination} (docs/qstash-protocol.md §2.1): to a URL (raw in the path, plus
 * the destination's own query string) or a URL group (fan-out, bare array response). 201 when
 * stored; a duplicate within the dedup window gets 202 with the first publish's ids and
 * `deduplicated: true`.
 */
export const publish: Handler = (ctx, r) =>
  isWorkflowPublish(r.req.headers) ? publishWorkflow(ctx, r) : submitRequest(ctx, r, r);

/**
 * Stores the request's body as a publish to the destination named by `target`'s path (the
 * request itself, or its path after `enqueue/<queue>/`), into the FIFO `queue` when given.
 */
export async function submitRequest(
  ctx: QueueContext,
  r: QueueRequest,
  target: QueueRequest,
  queue?: string,
): Promise<void> {
  const { destination, group } = parseDestination(target);
  const body = await readRaw(ctx, r);
  const result = await submit(ctx, {
    destination,
    group,
    config: (defaults) => configValues(r, defaults),
    requestHeaders: r.req.headers,
    body,
    ...(queue === undefined ? {} : { queue }),
    callerIP: r.req.socket.remoteAddress,
  });
  reply(r.res, result.status, result.value);
}
