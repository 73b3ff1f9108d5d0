import type { Config } from "../../config/schema.js";
import { AppError } from "../../shared/errors.js";
import { parseDuration } from "./duration.js";
import { parseFlowControl } from "./flow-control-config.js";
import { addHeader, isConnectionHeader } from "./headers.js";
import type { CallbackOptions, Headers, MessageMeta, Redaction } from "./message.js";
import { compileRetryDelay } from "./retry-delay.js";

/**
 * Publish configuration (docs/qstash-protocol.md §3), parsed from one merged map of lower-case
 * names to values: `Upstash-*` request headers over `upstash-*` query parameters over a URL group's
 * default headers. Every bad value is a 400 here, before anything is stored.
 */
export type ConfigValues = Map<string, string>;

export interface PublishOptions extends Pick<
  MessageMeta,
  | "method"
  | "header"
  | "notBefore"
  | "maxRetries"
  | "timeoutMs"
  | "retryDelayExpression"
  | "callback"
  | "callbackHeader"
  | "callbackOptions"
  | "failureCallback"
  | "failureCallbackHeader"
  | "failureCallbackOptions"
  | "labels"
  | "redact"
  | "flowControl"
  | "hop"
> {
  /** Absolute due time, ms. */
  dueAt: number;
  dedupId?: string | undefined;
  contentBasedDedup: boolean;
}

type Limits = Pick<
  Config,
  | "queueMaxRetries"
  | "queueMaxDelayMs"
  | "queueMaxTimeoutMs"
  | "queueDefaultTimeoutMs"
  | "queueMaxHops"
>;

const METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]);

/**
 * Request headers never forwarded by `Upstash-Header-Forward`: credentials, the content type
 * (forwarded as itself anyway) and connection headers (isConnectionHeader).
 */
const notForwarded = (name: string): boolean =>
  name === "authorization" || name === "content-type" || isConnectionHeader(name);

export function parsePublishOptions(
  cfg: ConfigValues,
  request: Record<string, string | string[] | undefined>,
  now: number,
  limits: Limits,
): PublishOptions {
  const header = forwarded(cfg, "upstash-forward-");
  const contentType = cfg.get("content-type");
  if (contentType !== undefined) header["Content-Type"] = [contentType];
  if (isTrue(cfg.get("upstash-header-forward"))) forwardAll(request, header);
  const timing = parseTiming(cfg, now, limits);
  return {
    method: parseMethod(cfg.get("upstash-method"), "Upstash-Method"),
    header,
    ...timing,
    maxRetries: parseRetries(cfg.get("upstash-retries"), "Upstash-Retries", 3, limits),
    timeoutMs: parseTimeout(cfg.get("upstash-timeout"), "Upstash-Timeout", limits),
    retryDelayExpression: parseRetryDelay(cfg.get("upstash-retry-delay")),
    dedupId: cfg.get("upstash-deduplication-id") || undefined,
    contentBasedDedup: isTrue(cfg.get("upstash-content-based-deduplication")),
    ...callbackPart(cfg, "callback", limits),
    ...failurePart(cfg, limits),
    labels: parseList(cfg.get("upstash-label")),
    redact: parseRedact(cfg.get("upstash-redact-fields")),
    flowControl: parseFlowControl(
      cfg.get("upstash-flow-control-key"),
      cfg.get("upstash-flow-control-value"),
    ),
    hop: parseHop(cfg.get("upstash-hop"), limits.queueMaxHops),
  };
}

/**
 * `Upstash-Hop`, which stashd's deliveries carry (docs/qstash-protocol.md §4.1): how many stashd
 * deliveries led to this publish. One at or past `maxHops` is refused (hop_limit, 400): a
 * destination that publishes back to stashd, such as a URL group containing its own publish URL,
 * would otherwise publish without end. Undefined without the header (a publish from a client).
 */
export function parseHop(value: string | undefined, maxHops: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (!/^\d{1,6}$/.test(text)) throw bad("Upstash-Hop", value);
  const hop = Number(text);
  if (hop >= maxHops) {
    throw new AppError(
      "hop_limit",
      `publish refused: it arrived on a delivery ${hop} stashd hops deep (STASHD_QUEUE_MAX_HOPS is ${maxHops}); a destination that publishes back to stashd (a URL group containing itself?) would loop`,
    );
  }
  return hop === 0 ? undefined : hop;
}

function parseTiming(cfg: ConfigValues, now: number, limits: Limits) {
  const nb = cfg.get("upstash-not-before");
  let dueAt = now;
  if (nb !== undefined) {
    if (!/^\d+$/.test(nb.trim())) throw bad("Upstash-Not-Before", nb);
    dueAt = Number(nb.trim()) * 1000;
  } else if (cfg.get("upstash-delay") !== undefined) {
    dueAt = now + parseDuration(cfg.get("upstash-delay") ?? "", "Upstash-Delay");
  }
  if (dueAt - now > limits.queueMaxDelayMs) {
    throw new AppError("bad_request", `delay exceeds the maximum of ${limits.queueMaxDelayMs} ms`);
  }
  return { dueAt: Math.max(dueAt, 0), notBefore: Math.max(dueAt, now) };
}

function callbackPart(cfg: ConfigValues, kind: "callback", limits: Limits) {
  const url = cfg.get(`upstash-${kind}`);
  if (!url) return {};
  return {
    callback: checkUrl(url, "Upstash-Callback"),
    callbackHeader: forwarded(cfg, `upstash-${kind}-forward-`),
    callbackOptions: callbackOptions(cfg, `upstash-${kind}-`, limits),
  };
}

function failurePart(cfg: ConfigValues, limits: Limits) {
  const url = cfg.get("upstash-failure-callback");
  if (!url) return {};
  return {
    failureCallback: checkUrl(url, "Upstash-Failure-Callback"),
    failureCallbackHeader: forwarded(cfg, "upstash-failure-callback-forward-"),
    failureCallbackOptions: callbackOptions(cfg, "upstash-failure-callback-", limits),
  };
}

function callbackOptions(cfg: ConfigValues, prefix: string, limits: Limits): CallbackOptions {
  const method = cfg.get(`${prefix}method`);
  const retries = cfg.get(`${prefix}retries`);
  const timeout = cfg.get(`${prefix}timeout`);
  const delay = cfg.get(`${prefix}delay`);
  return {
    method: method === undefined ? undefined : parseMethod(method, `${prefix}method`),
    retries:
      retries === undefined ? undefined : parseRetries(retries, `${prefix}retries`, 0, limits),
    timeoutMs:
      timeout === undefined ? undefined : parseTimeout(timeout, `${prefix}timeout`, limits),
    retryDelayExpression: parseRetryDelay(cfg.get(`${prefix}retry-delay`)),
    delayMs: delay === undefined ? undefined : parseCallbackDelay(delay, `${prefix}delay`, limits),
  };
}

/** `<prefix><name>` entries as delivered headers `<Name>`. */
function forwarded(cfg: ConfigValues, prefix: string): Headers {
  const out: Headers = {};
  for (const [name, value] of cfg) {
    if (name.startsWith(prefix) && name.length > prefix.length) {
      addHeader(out, name.slice(prefix.length), value);
    }
  }
  return out;
}

function forwardAll(request: Record<string, string | string[] | undefined>, out: Headers): void {
  for (const [name, value] of Object.entries(request)) {
    if (value === undefined || name.startsWith("upstash-") || notForwarded(name)) continue;
    for (const v of Array.isArray(value) ? value : [value]) addHeader(out, name, v);
  }
}

function parseMethod(raw: string | undefined, name: string): string {
  if (raw === undefined) return "POST";
  const method = raw.trim().toUpperCase();
  if (!METHODS.has(method)) throw bad(name, raw);
  return method;
}

function parseRetries(raw: string | undefined, name: string, dflt: number, limits: Limits) {
  if (raw === undefined) return dflt;
  if (!/^\d+$/.test(raw.trim())) throw bad(name, raw);
  const n = Number(raw.trim());
  if (n > limits.queueMaxRetries) {
    throw new AppError("bad_request", `${name} exceeds the maximum of ${limits.queueMaxRetries}`);
  }
  return n;
}

/**
 * `Upstash-Timeout` (or a callback's): absent (or 0) the default timeout, which is what the SDKs
 * assume (the plan's maximum; see docs/queue.md, Timeouts); past the ceiling a 400, as for
 * retries and delays.
 */
function parseTimeout(raw: string | undefined, name: string, limits: Limits): number {
  const dflt = Math.min(limits.queueDefaultTimeoutMs, limits.queueMaxTimeoutMs);
  if (raw === undefined) return dflt;
  const ms = parseDuration(raw, name);
  if (ms > limits.queueMaxTimeoutMs) {
    throw new AppError(
      "bad_request",
      `${name} exceeds the maximum of ${limits.queueMaxTimeoutMs} ms (STASHD_QUEUE_MAX_TIMEOUT_MS)`,
    );
  }
  return ms <= 0 ? dflt : ms;
}

/** A callback's delay, bounded like a publish's (STASHD_QUEUE_MAX_DELAY_MS). */
function parseCallbackDelay(raw: string, name: string, limits: Limits): number {
  const ms = parseDuration(raw, name);
  if (ms > limits.queueMaxDelayMs) {
    throw new AppError(
      "bad_request",
      `${name} exceeds the maximum of ${limits.queueMaxDelayMs} ms`,
    );
  }
  return ms;
}

function parseRetryDelay(raw: string | undefined): string | undefined {
  if (raw === undefined || raw.trim() === "") return undefined;
  compileRetryDelay(raw);
  return raw.trim();
}

function parseList(raw: string | undefined): string[] | undefined {
  const items = (raw ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  return items.length > 0 ? items : undefined;
}

/**
 * `body`, `header`/`headers` and `header[Name]`/`headers[Name]`, comma-separated
 * (docs/qstash-protocol.md §3.4).
 */
export function parseRedact(raw: string | undefined): Redaction | undefined {
  const items = parseList(raw);
  if (!items) return undefined;
  const out: Redaction = { body: false, allHeaders: false, headers: [] };
  for (const item of items) {
    const m = /^headers?(?:\[(.+)\])?$/i.exec(item);
    if (item.toLowerCase() === "body") out.body = true;
    else if (m?.[1] !== undefined) out.headers.push(m[1].toLowerCase());
    else if (m) out.allHeaders = true;
    else throw bad("Upstash-Redact-Fields", raw ?? "");
  }
  return out;
}

/**
 * A destination, callback or URL-group endpoint URL: http or https with a host, as written (WHATWG
 * parsing would turn `http:///x` or `http:x` into `http://x/`; the URL is stored and shown as
 * given, so the given text must name its host). 400 otherwise.
 */
export function checkUrl(raw: string, name: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new AppError("bad_request", `invalid ${name} url: ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new AppError(
      "bad_request",
      `invalid ${name} url: endpoint has invalid scheme, add http:// or https://`,
    );
  }
  if (!hostOf(raw)) {
    throw new AppError("bad_request", `invalid ${name} url: ${JSON.stringify(raw)} has no host`);
  }
  return raw;
}

/** The host written in `scheme://[user@]host[:port]`, or "" when there is none. */
function hostOf(raw: string): string {
  const authority = /^https?:\/\/([^/?#\\]*)/i.exec(raw)?.[1] ?? "";
  return authority.replace(/^.*@/, "").replace(/:\d*$/, "");
}

function isTrue(raw: string | undefined): boolean {
  return raw !== undefined && raw.trim().toLowerCase() === "true";
}

function bad(name: string, raw: string): AppError {
  return new AppError("bad_request", `invalid ${name} value: ${JSON.stringify(raw)}`);
}
