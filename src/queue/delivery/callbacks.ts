import { newMessageId } from "../domain/ids.js";
import type { AttemptResult, CallbackOptions, Headers, MessageMeta } from "../domain/message.js";
import type { NewMessage } from "../store/message-store.js";

/**
 * Callback messages (docs/qstash-protocol.md §4.3/§4.4). A callback is a new, signed, retried
 * message whose JSON body describes the attempt; `depth` grows by one per hop and callbacks past
 * `maxDepth` are not created, so a callback URL that itself fails cannot start an endless chain.
 */
export interface CallbackContext {
  meta: MessageMeta;
  body: Buffer;
  result: AttemptResult;
  retried: number;
  now: number;
  maxDepth: number;
  /**
   * A new id for the callback: it must live in its message's queue partition (a FIFO queue's
   * slot and the outcome that creates it are there), see MessageStore.idBeside. Without one the
   * id is random, which is right only with one partition.
   */
  childId?: (() => string) | undefined;
}

export function callbackMessage(ctx: CallbackContext): NewMessage | undefined {
  const { meta } = ctx;
  if (!meta.callback) return undefined;
  return child(ctx, meta.callback, meta.callbackHeader, meta.callbackOptions, undefined);
}

export function failureCallbackMessage(
  ctx: CallbackContext,
  dlqId: string,
): NewMessage | undefined {
  const { meta } = ctx;
  if (!meta.failureCallback) return undefined;
  const opts = meta.failureCallbackOptions;
  return child(ctx, meta.failureCallback, meta.failureCallbackHeader, opts, dlqId);
}

function child(
  ctx: CallbackContext,
  url: string,
  header: Headers | undefined,
  opts: CallbackOptions | undefined,
  dlqId: string | undefined,
): NewMessage | undefined {
  const { meta, now } = ctx;
  if (meta.depth + 1 > ctx.maxDepth) return undefined;
  const dueAt = now + (opts?.delayMs ?? 0);
  const childMeta: MessageMeta = {
    messageId: ctx.childId?.() ?? newMessageId(),
    url,
    method: opts?.method ?? "POST",
    header: { ...header, "Content-Type": ["application/json"] },
    createdAt: now,
    notBefore: dueAt,
    maxRetries: opts?.retries ?? meta.maxRetries,
    timeoutMs: opts?.timeoutMs ?? meta.timeoutMs,
    retryDelayExpression: opts?.retryDelayExpression,
    callerIP: meta.callerIP,
    queueName: meta.queueName,
    depth: meta.depth + 1,
    hop: meta.hop,
    // A workflow call's answer and a run's failure callback stay messages of the run.
    ...(meta.workflow && {
      workflow: { runId: meta.workflow.runId, callType: dlqId ? "failureCall" : "fromCallback" },
    }),
  };
  return { meta: childMeta, body: Buffer.from(JSON.stringify(payload(ctx, dlqId))), dueAt };
}

function payload(ctx: CallbackContext, dlqId: string | undefined): Record<string, unknown> {
  const { meta, result } = ctx;
  return {
    status: result.status,
    header: result.header,
    body: result.body.toString("base64"),
    ...(ctx.retried > 0 ? { retried: ctx.retried } : {}),
    maxRetries: meta.maxRetries,
    sourceMessageId: meta.messageId,
    ...(meta.topicName ? { topicName: meta.topicName, endpointName: meta.endpointName } : {}),
    url: meta.url,
    method: meta.method,
    sourceHeader: meta.header,
    sourceBody: ctx.body.toString("base64"),
    notBefore: meta.notBefore,
    createdAt: meta.createdAt,
    ...(meta.callerIP ? { callerIP: meta.callerIP } : {}),
    ...(dlqId ? { dlqId } : {}),
  };
}
