import { AppError } from "../../shared/errors.js";
import { checkUrl, type ConfigValues } from "../domain/publish-options.js";
import type { Handler, QueueContext, QueueRequest } from "./context.js";
import { submit } from "./submit.js";
import { decode, readRaw, reply } from "./util.js";
import { isWorkflowPublish } from "../workflow/produce.js";
import { publishWorkflow } from "../workflow/routes.js";

const GROUP_NAME = /^[A-Za-z0-9_.-]+$/;

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

/** The destination URL (path remainder + non-config query) or a URL group name. */
export function parseDestination(r: QueueRequest): { destination: string; group?: string } {
  let rest = r.rawPath.slice(r.rawPath.indexOf("/") + 1);
  if (/^https?%3a/i.test(rest)) rest = decode(rest);
  if (/^https?:\/\//i.test(rest)) {
    const own = ownQuery(r.rawQuery);
    const destination = own ? `${rest}${rest.includes("?") ? "&" : "?"}${own}` : rest;
    return { destination: checkUrl(destination, "destination") };
  }
  if (GROUP_NAME.test(rest)) return { destination: rest, group: rest };
  throw new AppError(
    "bad_request",
    "invalid destination url: endpoint has invalid scheme, add http:// or https://",
  );
}

/** The query parameters that belong to the destination: all but `qstash_token` and `upstash-*`. */
function ownQuery(rawQuery: string): string {
  return rawQuery
    .split("&")
    .filter((part) => part !== "" && !isConfigKey(decode(part.split("=")[0] ?? "")))
    .join("&");
}

const isConfigKey = (key: string): boolean => {
  const k = key.toLowerCase();
  return k === "qstash_token" || k.startsWith("upstash-");
};

/** Group defaults, overridden by `upstash-*` query parameters, overridden by request headers. */
export function configValues(r: QueueRequest, defaults?: Record<string, string[]>): ConfigValues {
  const cfg: ConfigValues = new Map();
  for (const [name, values] of Object.entries(defaults ?? {})) {
    cfg.set(name.toLowerCase(), (Array.isArray(values) ? values : [values]).join(","));
  }
  for (const [name, value] of r.query) {
    if (isConfigKey(name) && name.toLowerCase() !== "qstash_token")
      cfg.set(name.toLowerCase(), value);
  }
  for (const [name, value] of Object.entries(r.req.headers)) {
    if (value === undefined) continue;
    if (name.startsWith("upstash-") || name === "content-type") {
      cfg.set(name, Array.isArray(value) ? value.join(",") : value);
    }
  }
  return cfg;
}
