import { Agent, type Dispatcher } from "undici";
import { messageOf } from "../../shared/errors.js";
import { headerKey } from "../domain/headers.js";
import type { AttemptResult, Headers } from "../domain/message.js";
import { AttemptAbort } from "./attempt-abort.js";
import type { DestinationPolicy } from "./destination-policy.js";
import { guardedLookup } from "./guarded-lookup.js";

export interface OutboundRequest {
  url: string;
  method: string;
  /** An object, or a flat `[name, value, name, value, ...]` list (what undici takes fastest). */
  headers: Record<string, string | string[]> | string[];
  body: Buffer;
  timeoutMs: number;
  /** Most bytes of the response body read (the client's limit when unset). */
  maxBodyBytes?: number;
  /**
   * The attempt's abort, when the caller may abort it too (a lost lease); the client arms the
   * timeout on it. The abort reason becomes the attempt's error.
   */
  abort?: AttemptAbort;
}

/**
 * Outbound HTTP for deliveries: one undici Agent (keep-alive pool per origin), a per-attempt
 * timeout covering headers and body, and the response body read up to `maxBodyBytes` (or the
 * request's own limit): of the rest, up to DRAIN_BYTES are read and dropped so the connection is
 * reused; a longer rest ends the attempt at once with what was kept (`truncated`) and closes the
 * connection. Never throws: network errors and timeouts become status 0 with an `error`.
 * Redirects are not followed (a 3xx is a failed attempt, like any non-2xx).
 * With an active destination policy, a refused URL or resolved address fails the attempt (status
 * 0) without sending anything.
 *
 * Requests go through the Agent's `dispatch` with a handler of our own (Exchange) rather than
 * undici's `request`: the attempt needs the status, the headers and a bounded body, not a
 * readable stream, an abort signal listener and undici's own timers per request; see
 * docs/decisions.md ("Delivery HTTP").
 */
export class HttpClient {
  private readonly agent: Agent;
  private readonly targets = new TargetCache();

  constructor(
    private readonly maxBodyBytes: number,
    private readonly policy?: DestinationPolicy,
  ) {
    this.agent = new Agent({
      keepAliveTimeout: 30_000,
      connections: 256,
      pipelining: 1,
      ...(policy?.active ? { connect: { lookup: guardedLookup(policy) } } : {}),
    });
  }

  async send(req: OutboundRequest): Promise<AttemptResult> {
    const refused = this.refused(req.url);
    if (refused) return failed(refused);
    const abort = req.abort ?? new AttemptAbort();
    const timer = setTimeout(
      () => abort.abort(new Error(`request timed out after ${req.timeoutMs} ms`)),
      req.timeoutMs,
    );
    try {
      const target = this.targets.of(req.url);
      return await new Promise<AttemptResult>((resolve) => {
        // dispatch's boolean only says whether more may be queued now; a queued request still
        // runs, and every failure (a closed client too) reaches the handler's onResponseError.
        this.agent.dispatch(
          {
            origin: target.origin,
            path: target.path,
            method: req.method as Dispatcher.HttpMethod,
            headers: req.headers,
            body: req.method === "GET" || req.method === "HEAD" ? null : req.body,
            // The attempt's own timer (above) covers headers and body together.
            headersTimeout: 0,
            bodyTimeout: 0,
          },
          new Exchange(req.maxBodyBytes ?? this.maxBodyBytes, abort, resolve),
        );
      });
    } catch (err) {
      return failed(abort.aborted ? messageOf(abort.reason) : messageOf(err));
    } finally {
      clearTimeout(timer);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }

  /** The policy's verdict on the URL itself (names, IP literals); addresses are checked later. */
  private refused(url: string): string | undefined {
    try {
      this.policy?.checkUrl(url, "destination");
      return undefined;
    } catch (err) {
      return messageOf(err);
    }
  }
}

const failed = (error: string): AttemptResult => ({
  status: 0,
  header: {},
  body: Buffer.alloc(0),
  error,
});

/** Bytes past a response's limit read and dropped to keep the connection; more closes it. */
const DRAIN_BYTES = 64 * 1024;

/**
 * One request's response, gathered from undici's handler callbacks: the status, the headers and
 * the body's first `max` bytes. Later bytes are dropped: up to DRAIN_BYTES of them are still read
 * so the connection is reused; past that the exchange settles with what it kept and aborts the
 * request (closing the connection), so a destination answering gigabytes costs neither memory
 * nor the attempt's time. Settles once: with the response, or with status 0 and the error (the
 * abort's reason when the attempt was aborted: timeout, lost lease, cancel).
 */
class Exchange implements Dispatcher.DispatchHandler {
  private status = 0;
  private header: Headers = {};
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private dropped = 0;
  private settled = false;
  private controller: Dispatcher.DispatchController | undefined;

  constructor(
    private readonly max: number,
    private readonly abort: AttemptAbort,
    private readonly resolve: (r: AttemptResult) => void,
  ) {
    abort.onAbort((reason) => {
      if (!this.settled) this.controller?.abort(reason);
    });
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abort.reason) controller.abort(this.abort.reason);
  }

  onResponseStart(
    _c: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    this.status = statusCode;
    this.header = toHeaders(headers);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    const room = this.max - this.size;
    if (room > 0) {
      // Copied when cut: a slice would keep the whole chunk (and its socket read) alive.
      const kept = chunk.length <= room ? chunk : Buffer.from(chunk.subarray(0, room));
      this.chunks.push(kept);
      this.size += kept.length;
    }
    this.dropped += Math.max(0, chunk.length - Math.max(room, 0));
    if (this.dropped > DRAIN_BYTES) {
      this.onResponseEnd();
      controller.abort(new Error("response body over the limit: connection closed"));
    }
  }

  onResponseEnd(): void {
    if (this.settled) return;
    this.settled = true;
    const body = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks);
    this.chunks.length = 0;
    const truncated = this.dropped > 0 ? { truncated: true } : {};
    this.resolve({ status: this.status, header: this.header, body, ...truncated });
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    this.fail(err);
  }

  private fail(err: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.resolve(failed(this.abort.aborted ? messageOf(this.abort.reason) : messageOf(err)));
  }
}

function toHeaders(raw: Record<string, string | string[] | undefined>): Headers {
  const out: Headers = {};
  for (const name in raw) {
    const value = raw[name];
    const key = headerKey(name);
    if (value === undefined || key === undefined) continue;
    out[key] = Array.isArray(value) ? value : [value];
  }
  return out;
}

/** Most URLs whose origin and path are kept (a process delivers to a few, repeatedly). */
const TARGETS_KEPT = 1024;

/**
 * A delivery URL split as undici's `request(url)` splits it (WHATWG parsing: origin, then path
 * and query, the fragment dropped), cached per URL string: parsing is a cost per attempt.
 */
class TargetCache {
  private readonly known = new Map<string, { origin: string; path: string }>();

  of(url: string): { origin: string; path: string } {
    let t = this.known.get(url);
    if (!t) {
      const u = new URL(url);
      t = { origin: u.origin, path: `${u.pathname}${u.search}` };
      if (this.known.size >= TARGETS_KEPT) this.known.clear();
      this.known.set(url, t);
    }
    return t;
  }
}
