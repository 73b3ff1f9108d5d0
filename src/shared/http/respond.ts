import type { ServerResponse } from "node:http";
import { isAppError, messageOf } from "../errors.js";
import type { Logger } from "../log.js";

/** Writes a JSON body (already serialized) with the given status and extra headers. */
export function sendJson(
  res: ServerResponse,
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
 * The one place errors become responses: an AppError renders as `{"error": message}` with its
 * catalog status; anything else is a bug, logged with its stack and answered with a generic 500.
 */
export function sendError(
  res: ServerResponse,
  err: unknown,
  logger: Logger,
  headers: Record<string, string> = {},
): void {
  if (isAppError(err)) {
    if (err.status >= 500) logger.warn(err.message, { code: err.code });
    sendJson(res, err.status, JSON.stringify({ error: err.message }), headers);
    return;
  }
  logger.error("unexpected error", {
    err: messageOf(err),
    stack: err instanceof Error ? err.stack : undefined,
  });
  sendJson(res, 500, JSON.stringify({ error: "ERR internal error" }), headers);
}
