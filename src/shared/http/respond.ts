import type { IncomingMessage } from "node:http";
import { bodyDone } from "./body.js";
import { isAppError, messageOf } from "../errors.js";
import type { Logger } from "../log.js";

/**
 * What a response is written through: node:http's ServerResponse, or the KV gateway's fast lane
 * (lane.ts), which writes the same bytes on its own connections.
 */
export interface ReplySink {
  readonly headersSent: boolean;
  readonly destroyed: boolean;
  writeHead(status: number, headers: Record<string, string | number> | string[]): ReplySink;
  /** Ends the response; a body given here goes out with the headers when they are not sent yet. */
  end(body?: string | Buffer): unknown;
  /** False when the client reads slower than we write (wait for `drain`). */
  write(chunk: string | Buffer): boolean;
  cork(): void;
  uncork(): void;
  on(event: "drain" | "close", listener: () => void): unknown;
  off(event: "drain" | "close", listener: () => void): unknown;
  destroy(): unknown;
}

/** Writes a JSON body (already serialized) with the given status and extra headers. */
export function sendJson(
  res: ReplySink,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    ...headers,
  });
  res.end(body);
}

/**
 * Headers for a response sent before the request body was read whole and while nobody drains it
 * (a request refused before its body was wanted: no token, no route): Node then ends the
 * connection (what is left of the body is never read), and `Connection: close` tells keep-alive
 * clients not to send their next request on it. A body being drained (`req.resume()`, as for one
 * over a limit) keeps the connection: its client still gets to read the answer.
 */
export function closingIfUnread(
  req: IncomingMessage,
  headers: Record<string, string> = {},
): Record<string, string> {
  return bodyDone(req) || req.readableFlowing === true
    ? headers
    : { ...headers, connection: "close" };
}

/**
 * The one place errors become responses: an AppError renders as `{"error": message}` with its
 * catalog status; anything else is a bug, logged with its stack and answered with a generic 500.
 */
export function sendError(
  res: ReplySink,
  err: unknown,
  logger: Logger,
  headers: Record<string, string> = {},
): void {
  if (isAppError(err)) {
    if (err.status >= 500) logger.warn(err.message, { code: err.code });
    sendJson(res, err.status, JSON.stringify({ error: err.message }), {
      ...headers,
      ...err.headers,
    });
    return;
  }
  logger.error("unexpected error", {
    err: messageOf(err),
    stack: err instanceof Error ? err.stack : undefined,
  });
  sendJson(res, 500, JSON.stringify({ error: "ERR internal error" }), headers);
}

/** Bytes gathered into one socket write. */
const WRITE_BYTES = 64 * 1024;
/** Longest stretch of rendering before other requests get a turn. */
const SLICE_MS = 5;

/**
 * Writes a body produced piece by piece, with backpressure: pieces are joined into writes of about
 * WRITE_BYTES, a write waits for `drain` when the client reads slower than we produce, and the
 * producer pauses every SLICE_MS so other requests are served meanwhile. A slow reader thus costs
 * what the producer holds (the reply) plus one write, never a second rendered copy of the body.
 * A body that fits one write goes out with Content-Length, as before; longer ones are chunked.
 * HEAD: the pieces are only counted, for Content-Length. Stops early when the client goes away,
 * and with `stallMs` cuts off a client that takes nothing of a waiting write for that long.
 */
export async function streamBody(
  res: ReplySink,
  status: number,
  headers: Record<string, string | number>,
  pieces: Iterable<string | Buffer>,
  head = false,
  stallMs = 0,
): Promise<void> {
  const source = pieces[Symbol.iterator]();
  let slice = performance.now();
  const pause = async (): Promise<void> => {
    if (performance.now() - slice < SLICE_MS) return;
    await new Promise((resolve) => setImmediate(resolve));
    slice = performance.now();
  };
  if (head) {
    let length = 0;
    for (let next = source.next(); !next.done; next = source.next()) {
      length += Buffer.byteLength(next.value);
      await pause();
    }
    res.writeHead(status, { ...headers, "content-length": length }).end();
    return;
  }
  let batch = takeWrite(source);
  if (batch.done) {
    const body = batch.parts.length === 1 ? (batch.parts[0] as Buffer) : Buffer.concat(batch.parts);
    res.writeHead(status, { ...headers, "content-length": body.length }).end(body);
    return;
  }
  res.writeHead(status, headers);
  while (!res.destroyed) {
    res.cork();
    let ok = true;
    for (const part of batch.parts) ok = res.write(part);
    res.uncork();
    if (!ok) await drained(res, stallMs);
    if (batch.done) break;
    await pause();
    batch = takeWrite(source);
  }
  res.end();
}

/** Pieces up to about WRITE_BYTES (or the last ones); Buffers are passed on, not copied. */
function takeWrite(source: Iterator<string | Buffer>): { parts: Buffer[]; done: boolean } {
  const parts: Buffer[] = [];
  let size = 0;
  let text = "";
  const endText = (): void => {
    if (!text) return;
    const bytes = Buffer.from(text);
    parts.push(bytes);
    size += bytes.length;
    text = "";
  };
  while (size + text.length < WRITE_BYTES) {
    const next = source.next();
    if (next.done) {
      endText();
      return { parts, done: true };
    }
    if (typeof next.value === "string") {
      text += next.value;
    } else {
      endText();
      parts.push(next.value);
      size += next.value.length;
    }
  }
  endText();
  return { parts: joinSmall(parts), done: false };
}

/** Below this, Buffers in a write are copied together rather than written one by one. */
const SMALL_PART = 1024;

/**
 * Runs of small Buffers joined into one: a RESP2 reply of 300,000 one-byte strings comes as
 * three Buffers per element, and writing each (27,000 `res.write` calls per 64 KiB) took tens of
 * milliseconds per write, between two of streamBody's pauses. Large Buffers stay uncopied.
 */
function joinSmall(parts: Buffer[]): Buffer[] {
  if (parts.length <= 2) return parts;
  const out: Buffer[] = [];
  let run: Buffer[] = [];
  const endRun = (): void => {
    if (run.length > 0) out.push(run.length === 1 ? (run[0] as Buffer) : Buffer.concat(run));
    run = [];
  };
  for (const part of parts) {
    if (part.length < SMALL_PART) run.push(part);
    else {
      endRun();
      out.push(part);
    }
  }
  endRun();
  return out;
}

/** Resolves on `drain` or `close`; with `stallMs`, destroys the response after that long. */
function drained(res: ReplySink, stallMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = stallMs > 0 ? setTimeout(() => res.destroy(), stallMs) : undefined;
    const done = (): void => {
      clearTimeout(timer);
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}
