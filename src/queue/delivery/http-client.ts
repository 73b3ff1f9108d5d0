import type { Readable } from "node:stream";
import { Agent, request } from "undici";
import { messageOf } from "../../shared/errors.js";
import { canonicalHeader } from "../domain/headers.js";
import type { AttemptResult, Headers } from "../domain/message.js";
import type { DestinationPolicy } from "./destination-policy.js";
import { guardedLookup } from "./guarded-lookup.js";

export interface OutboundRequest {
  url: string;
  method: string;
  headers: Record<string, string | string[]>;
  body: Buffer;
  timeoutMs: number;
  /**
   * The attempt's controller, when the caller may abort it too (a lost lease); the client arms
   * the timeout on it. The abort reason becomes the attempt's error.
   */
  abort?: AbortController;
}

/**
 * Outbound HTTP for deliveries: one undici Agent (keep-alive pool per origin), a per-attempt
 * timeout covering headers and body, and the response body read up to `maxBodyBytes` (the rest is
 * discarded). Never throws: network errors and timeouts become status 0 with an `error`.
 * Redirects are not followed (a 3xx is a failed attempt, like any non-2xx).
 * With an active destination policy, a refused URL or resolved address fails the attempt (status
 * 0) without sending anything.
 */
export class HttpClient {
  private readonly agent: Agent;

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
    if (refused) return { status: 0, header: {}, body: Buffer.alloc(0), error: refused };
    const abort = req.abort ?? new AbortController();
    const timer = setTimeout(
      () => abort.abort(new Error(`request timed out after ${req.timeoutMs} ms`)),
      req.timeoutMs,
    );
    try {
      const res = await request(req.url, {
        dispatcher: this.agent,
        method: req.method as "POST",
        headers: req.headers,
        body: req.method === "GET" || req.method === "HEAD" ? null : req.body,
        signal: abort.signal,
        headersTimeout: req.timeoutMs,
        bodyTimeout: req.timeoutMs,
      });
      const body = await this.readLimited(res.body);
      return { status: res.statusCode, header: toHeaders(res.headers), body };
    } catch (err) {
      const error = abort.signal.aborted ? messageOf(abort.signal.reason) : messageOf(err);
      return { status: 0, header: {}, body: Buffer.alloc(0), error };
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

  /** The body's first `maxBodyBytes` (the rest is read and dropped, so the connection is reused). */
  private readLimited(stream: Readable): Promise<Buffer> {
    const max = this.maxBodyBytes;
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on("data", (chunk: Buffer) => {
        if (size >= max) return;
        chunks.push(chunk);
        size += chunk.length;
      });
      stream.once("error", reject);
      stream.once("end", () => {
        const all = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
        resolve(all.length > max ? all.subarray(0, max) : all);
      });
    });
  }
}

function toHeaders(raw: Record<string, string | string[] | undefined>): Headers {
  const out: Headers = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    out[canonicalHeader(name)] = Array.isArray(value) ? value : [value];
  }
  return out;
}
