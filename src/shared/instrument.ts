import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { LaneResponse } from "./http/lane.js";
import type { Logger } from "./log.js";
import { metrics } from "./metrics.js";

/**
 * Request lines and HTTP metrics around a service's handler. The handler names what a request
 * was with `labelRequest` (a queue route pattern, a KV command name); the wrapper counts it when
 * the response ends and, when asked (`accessLog`), logs one line: method, label, status,
 * duration, bytes on the wire. Answers with a 5xx (warn) and answers slower than `slowMs` (info)
 * are logged either way. The URL is never logged: KV paths hold keys and values, and `?_token=` /
 * `?qstash_token=` tokens.
 */
export interface RequestLabel {
  label: string;
  /** A name taken from the request (a command): only trusted once it was answered < 400. */
  unverified: boolean;
}

const labels = new WeakMap<IncomingMessage, RequestLabel>();

/** Names the request for its log line and metrics; the last call wins. */
export function labelRequest(req: IncomingMessage, label: string, unverified = false): void {
  labels.set(req, { label, unverified });
}

export interface InstrumentOptions {
  service: string;
  logger: Logger;
  /** One `request` line per request (STASHD_ACCESS_LOG); off by default for its cost. */
  accessLog: boolean;
  /** Requests slower than this are logged even without `accessLog`; 0: never (STASHD_SLOW_REQUEST_MS). */
  slowMs: number;
}

/** Most distinct request-taken labels kept per service; later new ones count as `other`. */
const MAX_LABELS = 500;

/**
 * Counts and logs finished requests of one service: what `instrument` does for node:http's
 * requests, and what the KV gateway's fast lane (http/lane.ts) calls for its own.
 */
export class RequestMeter {
  private readonly known = new Set<string>();

  constructor(private readonly opts: InstrumentOptions) {}

  /** One finished request: its metrics, and its log line when `lineKind` gives it one. */
  record(
    method: string | undefined,
    label: RequestLabel | undefined,
    status: number,
    seconds: number,
    bytes: number,
  ): void {
    const route = this.labelOf(label, status);
    metrics.httpRequest(this.opts.service, route, status, seconds);
    const kind = lineKind(status, seconds * 1000, this.opts);
    if (kind === undefined) return;
    this.opts.logger[kind.level](kind.msg, {
      method,
      route,
      status,
      ms: Math.round(seconds * 1e4) / 10,
      bytes,
    });
  }

  private labelOf(l: RequestLabel | undefined, status: number): string {
    if (!l) return "unmatched";
    if (!l.unverified || this.known.has(l.label)) return l.label;
    // An unknown command answered with an error must not mint a new time series per typo.
    if (status >= 400 || this.known.size >= MAX_LABELS) return "other";
    this.known.add(l.label);
    return l.label;
  }
}

export function instrument(
  handler: RequestListener,
  opts: InstrumentOptions,
  meter = new RequestMeter(opts),
): RequestListener {
  return (req, res) => {
    const started = process.hrtime.bigint();
    const sentBefore = req.socket.bytesWritten;
    res.once("close", () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const bytes = req.socket.bytesWritten - sentBefore;
      meter.record(req.method, labels.get(req), statusOf(res), seconds, bytes);
    });
    handler(req, res);
  };
}

/** `instrument` for the requests a fast lane (http/lane.ts) takes: counted when answered. */
export function meterLane(meter: RequestMeter): (res: LaneResponse) => void {
  return (res) => {
    const seconds = (performance.now() - res.started) / 1000;
    const status = res.headersSent ? res.statusCode : 499;
    meter.record("POST", res.label, status, seconds, res.bytesWritten);
  };
}

/** Which line a finished request gets, if any: failures and slow ones always, others when asked. */
function lineKind(
  status: number,
  ms: number,
  opts: InstrumentOptions,
): { level: "info" | "warn"; msg: string } | undefined {
  if (status >= 500) return { level: "warn", msg: "request failed" };
  if (opts.slowMs > 0 && ms >= opts.slowMs) return { level: "info", msg: "slow request" };
  return opts.accessLog ? { level: "info", msg: "request" } : undefined;
}

/** 499 (nginx's "client closed request") when the client left before any response. */
function statusOf(res: ServerResponse): number {
  return res.headersSent ? res.statusCode : 499;
}

/** The request-logging options from the two settings that choose them. */
export function requestLogging(settings: {
  accessLog: boolean;
  slowRequestMs: number;
}): Pick<InstrumentOptions, "accessLog" | "slowMs"> {
  return { accessLog: settings.accessLog, slowMs: settings.slowRequestMs };
}
