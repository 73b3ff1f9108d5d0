import type { IncomingMessage } from "node:http";
import { AppError } from "../errors.js";

/**
 * Reads a request body into one Buffer, refusing more than `limit` bytes. A declared
 * Content-Length over the limit is refused before reading; an undeclared (chunked) body is cut
 * off as soon as it passes the limit. The rest of an oversize body is drained, not parsed.
 */
export function readBody(
  req: IncomingMessage,
  limit: number,
  tooLarge: () => AppError,
): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > limit) {
    req.resume();
    return Promise.reject(tooLarge());
  }
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
