import { createHash } from "node:crypto";
import type { FlowControl } from "./flow-control-config.js";
import type { DlqMeta, Headers, MessageMeta, Redaction } from "./message.js";

/**
 * API shapes of messages and DLQ entries (docs/qstash-protocol.md §7.2/§7.3), with redaction
 * applied: redacted values render as `REDACTED:<sha256 hex>`. Fields PY reads unconditionally are
 * always present.
 */
const redacted = (value: string | Buffer): string =>
  `REDACTED:${createHash("sha256").update(value).digest("hex")}`;

export function redactHeaders(header: Headers | undefined, r: Redaction | undefined): Headers {
  if (!header) return {};
  if (!r) return header;
  const out: Headers = {};
  for (const [name, values] of Object.entries(header)) {
    const hide = r.allHeaders || r.headers.includes(name.toLowerCase());
    out[name] = hide ? values.map(redacted) : values;
  }
  return out;
}

/** `body` when valid UTF-8, else `bodyBase64`; redacted when asked. */
export function bodyFields(body: Buffer, redact: boolean, name = "body"): Record<string, string> {
  if (body.length === 0) return {};
  if (redact) return { [name]: redacted(body) };
  const text = body.toString("utf8");
  return Buffer.from(text, "utf8").equals(body)
    ? { [name]: text }
    : { [`${name}Base64`]: body.toString("base64") };
}

export function renderMessage(meta: MessageMeta, body: Buffer): Record<string, unknown> {
  const r = meta.redact;
  return {
    messageId: meta.messageId,
    url: meta.url,
    method: meta.method,
    header: redactHeaders(meta.header, r),
    ...bodyFields(body, r?.body ?? false),
    maxRetries: meta.maxRetries,
    notBefore: meta.notBefore,
    createdAt: meta.createdAt,
    ...optional(meta),
  };
}

function optional(meta: MessageMeta): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (meta.topicName) {
    out["topicName"] = meta.topicName;
    out["urlGroup"] = meta.topicName;
    if (meta.endpointName) out["endpointName"] = meta.endpointName;
  }
  if (meta.callerIP) {
    out["callerIP"] = meta.callerIP;
    out["callerIp"] = meta.callerIP;
  }
  if (meta.callback) {
    out["callback"] = meta.callback;
    out["callbackHeader"] = redactHeaders(meta.callbackHeader, meta.redact);
  }
  if (meta.failureCallback) {
    out["failureCallback"] = meta.failureCallback;
    out["failureCallbackHeader"] = redactHeaders(meta.failureCallbackHeader, meta.redact);
  }
  if (meta.retryDelayExpression) out["retryDelayExpression"] = meta.retryDelayExpression;
  if (meta.scheduleId) out["scheduleId"] = meta.scheduleId;
  if (meta.queueName) out["queueName"] = meta.queueName;
  Object.assign(out, flowControlFields(meta.flowControl));
  if (meta.labels) {
    out["label"] = meta.labels[0];
    out["labels"] = meta.labels;
  }
  return out;
}

/**
 * `flowControlKey`, `parallelism`, `rate`, `period` (docs/qstash-protocol.md §7), as messages and
 * schedules echo them.
 */
export function flowControlFields(fc: FlowControl | undefined): Record<string, unknown> {
  if (!fc) return {};
  return {
    flowControlKey: fc.key,
    ...(fc.parallelism > 0 ? { parallelism: fc.parallelism } : {}),
    ...(fc.rate > 0 ? { rate: fc.rate } : {}),
    period: fc.period,
  };
}

export function renderDlq(meta: DlqMeta, body: Buffer): Record<string, unknown> {
  return {
    ...renderMessage(meta, body),
    dlqId: meta.dlqId,
    responseStatus: meta.responseStatus,
    responseHeader: meta.responseHeader,
    ...bodyFields(Buffer.from(meta.responseBodyBase64, "base64"), false, "responseBody"),
    ...(meta.responseBodyTruncated ? { responseBodyTruncated: true } : {}),
  };
}
