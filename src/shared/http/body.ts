import type { IncomingMessage, ServerResponse } from "node:http";
import { AppError } from "../errors.js";

/**
 * The request body bytes a process reads or holds at once, over all its listeners (KV gateway and
 * queue share one): a body is counted from its first byte (a declared Content-Length at once)
 * until its response has closed. A body that does not fit is refused with 503 and `Retry-After`
 * before more of it is read, so many concurrent large bodies cost at most `limit` bytes, not their
 * sum (STASHD_MAX_INFLIGHT_BODY_BYTES).
 */
export class BodyBudget {
  private used = 0;

  constructor(readonly limit: number) {}

  /** Bytes counted now. */
  get inUse(): number {
    return this.used;
  }

  /** Counts `bytes` when they fit; false, and nothing counted, when they would pass the limit. */
  take(bytes: number): boolean {
    if (bytes > 0 && this.used + bytes > this.limit) return false;
    this.used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }
}

/** What a body read is counted against, and the response whose close ends the count. */
export interface BodyHold {
  budget: BodyBudget;
  until: ServerResponse;
  /** Start of the refusal's message (`ERR ` on the KV gateway, as Redis words errors). */
  errorPrefix?: string;
}

/** Seconds a client refused for the budget is asked to wait (`Retry-After`). */
const BUSY_RETRY_AFTER_S = 1;

function busy(hold: BodyHold): AppError {
  return new AppError(
    "server_busy",
    `${hold.errorPrefix ?? ""}too many request body bytes in flight (limit ${hold.budget.limit}): retry later`,
    { headers: { "retry-after": String(BUSY_RETRY_AFTER_S) } },
  );
}

/**
 * A counter of one request's body bytes in `hold`'s budget, given back when its response closes.
 * Without a hold, counts nothing and never refuses.
 */
function counter(hold: BodyHold | undefined): (bytes: number) => boolean {
  if (!hold) return () => true;
  let held = 0;
  let open = true;
  hold.until.once("close", () => {
    open = false;
    hold.budget.give(held);
    held = 0;
  });
  return (bytes) => {
    if (!hold.budget.take(bytes)) return false;
    if (open) held += bytes;
    else hold.budget.give(bytes);
    return true;
  };
}

/** Requests whose body was taken whole by `readBuffered` before node:http saw its end. */
const takenWhole = new WeakSet<IncomingMessage>();

/**
 * Reads a request body into one Buffer, refusing more than `limit` bytes. A declared
 * Content-Length over the limit is refused before reading; an undeclared (chunked) body is cut
 * off as soon as it passes the limit. The rest of an oversize body is drained, not parsed.
 *
 * The usual small body comes in the packet of its headers. node:http calls the request handler
 * (and so this function) from the headers, before it has parsed the body; it pushes the body into
 * `req` next and runs microtasks after that. So after one microtask such a body is usually all
 * buffered in `req`, and `readBuffered` takes it in one `read()`: no listeners, no flowing mode,
 * no `data`/`end` events (that machinery was most of what a 20-byte JSON command cost beyond the
 * same command in the path: benchmarks-log.md, 2026-11-26 night). Any other body is read as a stream
 * (`readStreamed`), with the same limits and errors.
 *
 * With a `hold`, the body's bytes are counted in its budget (BodyBudget): past the budget the
 * read fails with 503 `server_busy` (and `Retry-After`) before more is taken.
 */
export async function readBody(
  req: IncomingMessage,
  limit: number,
  tooLarge: () => AppError,
  hold?: BodyHold,
): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > limit) {
    req.resume();
    throw tooLarge();
  }
  const count = counter(hold);
  // A declared body is counted whole before any of it is read; a chunked one as it arrives.
  // Refused for the budget: the body is drained (read and dropped, costing no memory) so the
  // client reads the 503 instead of failing to write its body to a closed connection.
  const refused = (): AppError => {
    req.resume();
    return busy(hold as BodyHold);
  };
  if (!count(declared)) throw refused();
  const chunked = declared > 0 ? () => true : count;
  await undefined;
  return (
    readBuffered(req, declared, limit, tooLarge, chunked, refused) ??
    readStreamed(req, limit, tooLarge, chunked, refused)
  );
}

/**
 * Whether the request's body has been read whole (or the request had none): an answer sent now
 * leaves nothing unread on the connection.
 */
export function bodyDone(req: IncomingMessage): boolean {
  return req.complete || takenWhole.has(req);
}

/**
 * The whole body when it is already buffered in `req` and nobody has started reading it: the
 * request is complete, or all `declared` (Content-Length) bytes are there. Undefined otherwise.
 */
function readBuffered(
  req: IncomingMessage,
  declared: number,
  limit: number,
  tooLarge: () => AppError,
  count: (bytes: number) => boolean,
  refused: () => AppError,
): Buffer | undefined {
  if (req.readableFlowing !== null || req.readableDidRead) return undefined;
  const whole = req.complete || (declared > 0 && req.readableLength === declared);
  if (!whole) return undefined;
  if (req.readableLength > limit) {
    req.resume();
    throw tooLarge();
  }
  if (!count(req.readableLength)) throw refused();
  if (!req.complete) takenWhole.add(req);
  // In paused mode read() returns everything buffered as one Buffer (null when nothing is).
  return (req.read() as Buffer | null) ?? Buffer.alloc(0);
}

function readStreamed(
  req: IncomingMessage,
  limit: number,
  tooLarge: () => AppError,
  count: (bytes: number) => boolean,
  refused: () => AppError,
): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? 0);
  return new Promise((resolve, reject) => {
    // A declared body is copied into one buffer of its size as it arrives, so the chunks (slices
    // of the socket's reads) are let go at once, never held all together with their concatenation.
    const whole = declared > 0 ? Buffer.allocUnsafe(declared) : undefined;
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    const fail = (err: AppError): void => {
      if (failed) return;
      failed = true;
      chunks.length = 0;
      reject(err);
    };
    req.on("data", (chunk: Buffer) => {
      if (failed) return;
      const after = size + chunk.length;
      if (after > limit || (whole && after > whole.length)) return fail(tooLarge());
      if (!count(chunk.length)) return fail(refused());
      if (whole) chunk.copy(whole, size);
      else chunks.push(chunk);
      size += chunk.length;
    });
    req.on("end", () => {
      if (failed) return;
      if (whole) resolve(size === whole.length ? whole : whole.subarray(0, size));
      else resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
    });
    const abort = (why: string): void =>
      fail(new AppError("bad_request", `request body could not be read: ${why}`));
    req.on("error", (err) => abort(err.message));
    // A client that goes away mid-body may close without an error event; never wait forever.
    req.on("close", () => {
      if (!req.complete) abort("the client closed the connection");
    });
  });
}
