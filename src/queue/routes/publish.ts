import { AppError } from "../../shared/errors.js";
import { checkDestinations } from "../delivery/destination-policy.js";
import { buildMeta, dedupKey, type Target } from "../domain/build.js";
import { parsePublishOptions, checkUrl, type ConfigValues } from "../domain/publish-options.js";
import { newLeaseToken, type MessageStore, type NewMessage } from "../store/message-store.js";
import type { Handler, QueueContext, QueueRequest } from "./context.js";
import { decode, readRaw, reply } from "./util.js";

const GROUP_NAME = /^[A-Za-z0-9_.-]+$/;

/**
 * POST /v2/publish/{destination} (spec 2.1): to a URL (raw in the path, plus the destination's
 * own query string) or a URL group (fan-out, bare array response). 201 when stored; a duplicate
 * within the dedup window gets 202 with the first publish's ids and `deduplicated: true`.
 */
export const publish: Handler = async (ctx, r) => {
  const { destination, group: groupName } = parseDestination(r);
  const group = groupName === undefined ? undefined : await ctx.topics.get(groupName);
  if (groupName !== undefined && !group) throw new AppError("not_found", "url group not found");
  const body = await readRaw(ctx, r);
  const now = Date.now();
  const cfg = configValues(r, group?.headers);
  const opts = parsePublishOptions(cfg, r.req.headers, now, ctx.config);
  const targets: Target[] = group
    ? group.endpoints.map((e) => ({ url: e.url, topicName: group.name, endpointName: e.name }))
    : [{ url: destination }];
  checkDestinations(ctx.config, [
    ...targets.map((t) => t.url),
    opts.callback,
    opts.failureCallback,
  ]);
  const callerIP = r.req.socket.remoteAddress;
  const messages: NewMessage[] = targets.map((t) => ({
    meta: buildMeta(opts, t, now, callerIP),
    body,
    dueAt: opts.dueAt,
  }));
  const response = messages.map((m) => ({ messageId: m.meta.messageId, url: m.meta.url }));
  const key = dedupKey(opts, destination, body);
  const dedup =
    key === undefined
      ? undefined
      : {
          key,
          windowMs: ctx.config.queueDedupWindowMs,
          response: JSON.stringify(response),
        };
  const result = await storeAndDispatch(ctx, now, messages, dedup);
  if (!result.stored) {
    const first = JSON.parse(result.response) as Record<string, unknown>[];
    const marked = first.map((m) => ({ ...m, deduplicated: true }));
    reply(r.res, 202, group ? marked : marked[0]);
    return;
  }
  reply(r.res, 201, group ? response : response[0]);
};

/**
 * Stores the messages. When they are due now and this process has free delivery slots they are
 * leased to it in the same script and delivered at once (no claim round trip); otherwise the
 * dispatcher is woken for their due time.
 */
async function storeAndDispatch(
  ctx: QueueContext,
  now: number,
  messages: NewMessage[],
  dedup: Parameters<MessageStore["enqueue"]>[2],
) {
  const dueAt = messages[0]?.dueAt ?? now;
  // Flow-control messages wait for their key's admission (lua/flow-includes.ts), never leased here.
  const direct = dueAt <= now && !messages[0]?.meta.flowControl;
  const reserved = direct ? ctx.dispatcher.reserve(messages.length) : 0;
  const lease =
    reserved > 0 ? { token: newLeaseToken(), leaseMs: ctx.config.queueLeaseMs } : undefined;
  try {
    const result = await ctx.messages.enqueue(now, messages, dedup, lease);
    if (lease && result.stored) {
      const leaseUntil = now + lease.leaseMs;
      ctx.dispatcher.adopt(
        messages.map((m) => ({ ...m, retried: 0, token: lease.token, leaseUntil })),
      );
    } else {
      ctx.dispatcher.release(reserved);
      if (result.stored) ctx.dispatcher.wake(dueAt);
    }
    return result;
  } catch (err) {
    ctx.dispatcher.release(reserved);
    throw err;
  }
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
