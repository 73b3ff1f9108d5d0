import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { Logger } from "./log.js";
import { metrics } from "./metrics.js";

/**
 * Request lines and HTTP metrics around a service's handler. The handler names what a request
 * was with `labelRequest` (a queue route pattern, a KV command name); the wrapper logs one line
 * when the response ends — method, label, status, duration, bytes on the wire — and counts it.
 * The URL is never logged: KV paths hold keys and values, and `?_token=` / `?qstash_token=`
 * tokens.
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
      opts.logger.info("request", {
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

/** 499 (nginx's "client closed request") when the client left before any response. */
function statusOf(res: ServerResponse): number {
  return res.headersSent ? res.statusCode : 499;
}
