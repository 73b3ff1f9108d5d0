import type { ServerResponse } from "node:http";
import { AppError } from "../../shared/errors.js";
import { readBody } from "../../shared/http/body.js";
import { parseBoundedJson } from "../../shared/json-bound.js";
import { sendJson, streamBody } from "../../shared/http/respond.js";
import type { QueueContext, QueueRequest } from "./context.js";

export function reply(res: ServerResponse, status: number, value?: unknown): void {
  if (value === undefined) {
    res.writeHead(status).end();
    return;
  }
  sendJson(res, status, JSON.stringify(value));
}

/**
 * `reply` of a JSON array that may be long (every schedule): each item is stringified on its own
 * and written by streamBody, which pauses every few milliseconds and waits for a slow reader,
 * where one JSON.stringify of 10,000 schedules (6 MB) held the event loop for about 100 ms. The
 * same bytes as `reply`; a body over 64 KiB goes out chunked instead of with Content-Length.
 */
export function replyArray(res: ServerResponse, status: number, items: unknown[]): Promise<void> {
  return streamBody(res, status, { "content-type": "application/json" }, arrayPieces(items));
}

function* arrayPieces(items: unknown[]): Generator<string> {
  yield "[";
  for (let i = 0; i < items.length; i++) {
    if (i > 0) yield ",";
    yield JSON.stringify(items[i]) ?? "null";
  }
  yield "]";
}

/**
 * The request body, at most `limit` bytes (the message size by default), counted in the process's
 * budget of body bytes in flight until the response closes.
 */
export function readRaw(
  ctx: QueueContext,
  r: QueueRequest,
  limit = ctx.config.queueMaxMessageBytes,
): Promise<Buffer> {
  return readBody(
    r.req,
    limit,
    () => new AppError("payload_too_large", `message body exceeds the maximum of ${limit} bytes`),
    { budget: ctx.bodies, until: r.res },
  );
}

/** The JSON object body, or undefined when the body is empty. */
export async function readJsonObject(
  ctx: QueueContext,
  r: QueueRequest,
): Promise<Record<string, unknown> | undefined> {
  const raw = await readRaw(ctx, r);
  if (raw.length === 0) return undefined;
  const value = parseBoundedJson(
    raw,
    ctx.config.queueMaxJsonValues,
    "STASHD_QUEUE_MAX_JSON_VALUES",
  );
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new AppError("bad_request", "request body must be a JSON object");
  }
  return value as Record<string, unknown>;
}

/** Repeated (`k=a&k=b`) or comma-separated (`k=a,b`) query values. */
export function multi(q: URLSearchParams, name: string): string[] {
  return q
    .getAll(name)
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter((v) => v !== "");
}

export function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.map(String).filter((v) => v !== "") : [];
}

/** `count` query parameter: default `dflt`, at most `max`. */
export function countParam(q: URLSearchParams, dflt: number, max: number): number {
  const raw = q.get("count");
  if (raw === null || raw === "") return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new AppError("bad_request", `invalid count: ${raw}`);
  return Math.min(n, max);
}

/**
 * The `cursor` query parameter of the DLQ listings (a stream-style id `<ms>-<n>`, optionally
 * `~<partition>`), or undefined for the first page. The logs take more forms
 * (domain/log-cursor.ts).
 */
export function cursorParam(q: URLSearchParams): string | undefined {
  const raw = q.get("cursor");
  if (raw === null || raw === "") return undefined;
  if (!/^\d+-\d+(~\d+)?$/.test(raw)) throw new AppError("bad_request", `invalid cursor: ${raw}`);
  return raw;
}

export function notFound(what: string): AppError {
  return new AppError("not_found", `${what} not found`);
}

export const decode = (segment: string): string => {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
};
