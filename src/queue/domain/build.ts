import { createHash } from "node:crypto";
import { newMessageId } from "./ids.js";
import type { DlqMeta, Headers, MessageMeta } from "./message.js";
import type { ConfigValues, PublishOptions } from "./publish-options.js";

export interface Target {
  url: string;
  topicName?: string | undefined;
  endpointName?: string | undefined;
}

/** What produced a message besides its publish: a schedule's fire, a FIFO queue's enqueue. */
export interface MetaSource {
  scheduleId?: string | undefined;
  queueName?: string | undefined;
}

/**
 * The stored meta of a new message from its parsed publish options; `messageId` is the id placed
 * in the message's queue partition (store/partitions.ts), a random one by default.
 *
 * One object literal with every field, on purpose: a copy by spread that adds fields
 * (`{...meta, x}` with `x` new) takes V8's slow path, about 5 µs per publish to build and to
 * serialize against 1 µs (measured 2026-11-27, docs/decisions.md, Hot-path objects).
 */
export function buildMeta(
  opts: PublishOptions,
  target: Target,
  now: number,
  callerIP: string | undefined,
  messageId = newMessageId(),
  source: MetaSource = {},
): MessageMeta {
  return {
    messageId,
    url: target.url,
    method: opts.method,
    header: opts.header,
    createdAt: now,
    notBefore: opts.notBefore,
    maxRetries: opts.maxRetries,
    timeoutMs: opts.timeoutMs,
    retryDelayExpression: opts.retryDelayExpression,
    callback: opts.callback,
    callbackHeader: opts.callbackHeader,
    callbackOptions: opts.callbackOptions,
    failureCallback: opts.failureCallback,
    failureCallbackHeader: opts.failureCallbackHeader,
    failureCallbackOptions: opts.failureCallbackOptions,
    topicName: target.topicName,
    endpointName: target.endpointName,
    callerIP,
    labels: opts.labels,
    redact: opts.redact,
    flowControl: opts.flowControl,
    depth: 0,
    hop: opts.hop,
    scheduleId: source.scheduleId,
    queueName: source.queueName,
    // Set by workflow runs on a copy (`{...meta, workflow}`): a copy that only replaces fields
    // stays fast, one that adds a field does not.
    workflow: undefined,
  };
}

/**
 * The dedup key of a publish: the explicit id, or for content-based dedup a hash of destination,
 * body, Content-Type and forwarded headers (docs/qstash-protocol.md §3).
 */
export function dedupKey(opts: PublishOptions, destination: string, body: Buffer) {
  if (opts.dedupId) return `id:${opts.dedupId}`;
  if (!opts.contentBasedDedup) return undefined;
  const h = createHash("sha256").update(destination).update("\0").update(body).update("\0");
  const sorted = Object.entries(opts.header).sort(([a], [b]) => a.localeCompare(b));
  return `content:${h.update(JSON.stringify(sorted)).digest("hex")}`;
}

/**
 * A DLQ retry's message: the original configuration with the new id `messageId` (placed in the
 * DLQ entry's queue partition, see MessageStore.retryDlq), where any publish header given on the
 * retry request overrides the original value (docs/qstash-protocol.md §2.8).
 */
export function retriedMeta(
  original: MessageMeta,
  cfg: ConfigValues,
  opts: PublishOptions,
  now: number,
  messageId: string,
): MessageMeta {
  const has = (name: string) => cfg.has(name);
  const forwards = [...cfg.keys()].some((k) => k.startsWith("upstash-forward-"));
  const header: Headers = forwards ? { ...original.header, ...opts.header } : original.header;
  return {
    ...original,
    messageId,
    createdAt: now,
    notBefore: opts.notBefore,
    header,
    method: has("upstash-method") ? opts.method : original.method,
    maxRetries: has("upstash-retries") ? opts.maxRetries : original.maxRetries,
    timeoutMs: has("upstash-timeout") ? opts.timeoutMs : original.timeoutMs,
    retryDelayExpression: has("upstash-retry-delay")
      ? opts.retryDelayExpression
      : original.retryDelayExpression,
    callback: has("upstash-callback") ? opts.callback : original.callback,
    failureCallback: has("upstash-failure-callback")
      ? opts.failureCallback
      : original.failureCallback,
    depth: 0,
  };
}

/** The message part of a DLQ entry (without dlqId and the last response). */
export function baseMeta(entry: DlqMeta): MessageMeta {
  const copy: Partial<DlqMeta> = { ...entry };
  delete copy.dlqId;
  delete copy.failedAt;
  delete copy.responseStatus;
  delete copy.responseHeader;
  delete copy.responseBodyBase64;
  delete copy.responseBodyTruncated;
  return copy as MessageMeta;
}
