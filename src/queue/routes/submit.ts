import { AppError } from "../../shared/errors.js";
import { checkDestinations } from "../delivery/destination-policy.js";
import { buildMeta, dedupKey, type Target } from "../domain/build.js";
import { parsePublishOptions, type ConfigValues } from "../domain/publish-options.js";
import type { NewMessage } from "../store/message-store.js";
import type { QueueContext } from "./context.js";
import { notFound } from "./util.js";

/** Queue names (spec 2.2): alphanumeric, `-`, `_`, `.`. */
const QUEUE_NAME = /^[A-Za-z0-9_.-]+$/;

export function checkQueueName(name: string): string {
  if (!QUEUE_NAME.test(name)) {
    throw new AppError("bad_request", "invalid queue name: use letters, digits, -, _ or .");
  }
  return name;
}

/** One publish or enqueue, however it arrived (enqueue route, batch item). */
export interface Submission {
  /** The destination URL, or the URL group name when `group` is set. */
  destination: string;
  group?: string | undefined;
  /** Configuration values given the URL group's default headers (if any). */
  config(defaults?: Record<string, string[]>): ConfigValues;
  /** Lower-case request headers (for `Upstash-Header-Forward`). */
  requestHeaders: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** Enqueue into this FIFO queue instead of publishing. */
  queue?: string | undefined;
  callerIP: string | undefined;
}

/** What a publish answers: status 201, or 202 for a duplicate; an object, or an array for groups. */
export interface SubmitResult {
  status: 201 | 202;
  value: unknown;
}

/**
 * Stores a publish or an enqueue (spec 2.1, 2.2): one message per target, deduplicated like
 * publish. Enqueued messages join their queue (created on first use) and start when it admits
 * them; published ones are due at once (or after their delay). Wakes the local dispatcher.
 */
export async function submit(ctx: QueueContext, s: Submission): Promise<SubmitResult> {
  const group = s.group === undefined ? undefined : await ctx.topics.get(s.group);
  if (s.group !== undefined && !group) throw notFound("url group");
  const now = Date.now();
  const opts = parsePublishOptions(s.config(group?.headers), s.requestHeaders, now, ctx.config);
  const targets: Target[] = group
    ? group.endpoints.map((e) => ({ url: e.url, topicName: group.name, endpointName: e.name }))
    : [{ url: s.destination }];
  checkDestinations(ctx.config, [
    ...targets.map((t) => t.url),
    opts.callback,
    opts.failureCallback,
  ]);
  const messages: NewMessage[] = targets.map((t) => ({
    meta: { ...buildMeta(opts, t, now, s.callerIP), queueName: s.queue },
    body: s.body,
    dueAt: opts.dueAt,
  }));
  const response = messages.map((m) => ({ messageId: m.meta.messageId, url: m.meta.url }));
  const key = dedupKey(opts, s.destination, s.body);
  const dedup =
    key === undefined
      ? undefined
      : { key, windowMs: ctx.config.queueDedupWindowMs, response: JSON.stringify(response) };
  const result =
    s.queue === undefined
      ? await ctx.messages.enqueue(now, messages, dedup)
      : await ctx.queues.enqueue(now, s.queue, messages, dedup);
  if (!result.stored) {
    const first = JSON.parse(result.response) as Record<string, unknown>[];
    const marked = first.map((m) => ({ ...m, deduplicated: true }));
    return { status: 202, value: group ? marked : marked[0] };
  }
  ctx.dispatcher.wake(opts.dueAt);
  return { status: 201, value: group ? response : response[0] };
}
