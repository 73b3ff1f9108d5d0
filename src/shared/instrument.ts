import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
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
interface RequestLabel {
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

export function instrument(handler: RequestListener, opts: InstrumentOptions): RequestListener {
  const known = new Set<string>();
  const labelOf = (req: IncomingMessage, status: number): string => {
    const l = labels.get(req);
    if (!l) return "unmatched";
    if (!l.unverified || known.has(l.label)) return l.label;
    // An unknown command answered with an error must not mint a new time series per typo.
    if (status >= 400 || known.size >= MAX_LABELS) return "other";
    known.add(l.label);
    return l.label;
  };
  return (req, res) => {
    const started = process.hrtime.bigint();
    const sentBefore = req.socket.bytesWritten;
    res.once("close", () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const status = statusOf(res);
      const route = labelOf(req, status);
      metrics.httpRequest(opts.service, route, status, seconds);
      const kind = lineKind(status, seconds * 1000, opts);
      if (kind === undefined) return;
      opts.logger[kind.level](kind.msg, {
        method: req.method,
        route,
        status,
        ms: Math.round(seconds * 1e4) / 10,
        bytes: req.socket.bytesWritten - sentBefore,
      });
    });
    handler(req, res);
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
