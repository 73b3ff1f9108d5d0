import type { IncomingMessage } from "node:http";
import { AppError } from "../errors.js";

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
 * same command in the path: benchmarks.md, 2026-11-26 night). Any other body is read as a stream
 * (`readStreamed`), with the same limits and errors.
 */
export async function readBody(
  req: IncomingMessage,
  limit: number,
  tooLarge: () => AppError,
): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > limit) {
    req.resume();
    throw tooLarge();
  }
  await undefined;
  return readBuffered(req, declared, limit, tooLarge) ?? readStreamed(req, limit, tooLarge);
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
): Buffer | undefined {
  if (req.readableFlowing !== null || req.readableDidRead) return undefined;
  const whole = req.complete || (declared > 0 && req.readableLength === declared);
  if (!whole) return undefined;
  if (req.readableLength > limit) {
    req.resume();
    throw tooLarge();
  }
  if (!req.complete) takenWhole.add(req);
  // In paused mode read() returns everything buffered as one Buffer (null when nothing is).
  return (req.read() as Buffer | null) ?? Buffer.alloc(0);
}

function readStreamed(
  req: IncomingMessage,
  limit: number,
  tooLarge: () => AppError,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on("data", (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limit) {
        failed = true;
        chunks.length = 0;
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (!failed) resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
    });
    const abort = (why: string): void => {
      if (failed) return;
      failed = true;
      reject(new AppError("bad_request", `request body could not be read: ${why}`));
    };
    req.on("error", (err) => abort(err.message));
    // A client that goes away mid-body may close without an error event; never wait forever.
    req.on("close", () => {
      if (!req.complete) abort("the client closed the connection");
    });
  });
}
