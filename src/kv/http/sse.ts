import type { IncomingMessage, ServerResponse } from "node:http";
import { AppError } from "../../shared/errors.js";
import type { ExclusiveConnection } from "../../shared/redis/backend.js";
import type { Logger } from "../../shared/log.js";
import type { Reply } from "../../shared/redis/resp.js";
import type { Principal } from "../databases/database.js";
import { upstashError } from "../reply/reply.js";
import type { StreamBacklog } from "../reply/reply-buffers.js";

/**
 * Server-sent event bridges for `/subscribe/<channel>`, `/psubscribe/<pattern>` and `/monitor`.
 * Each stream holds its own backend connection, released as soon as the client goes away (or
 * the stream is closed on shutdown). Lines, as @upstash/redis parses them:
 *   data: subscribe,<channel>,<count>        data: message,<channel>,<payload>
 *   data: psubscribe,<pattern>,<count>       data: pmessage,<pattern>,<channel>,<payload>
 *   data: "OK"  then one Redis MONITOR line per command, client address masked as 0.0.0.0:0
 * Channels, patterns and payloads are raw text; one containing CR or LF is sent JSON-quoted
 * instead, commas as `\u002c` (the SDK, JSON-parsing every payload, turns such a payload back into
 * the exact original),
 * and `sseEvent` escapes any CR or LF left, so no content can end a line: every Redis push is
 * exactly one event, and none can be forged by a channel name or message. Idle streams get a
 * `: keepalive` comment every `sseKeepAliveMs`. Unsent bytes count against the process's budget of
 * bytes held for slow readers (reply-buffers.ts): a client that does not read is cut off.
 */
export type StreamKind = "subscribe" | "psubscribe" | "monitor";

export interface StreamOptions {
  keepAliveMs: number;
  headers: Record<string, string>;
  /** Registers a stream so shutdown can end it; returns the unregister function. */
  track: (end: () => void) => () => void;
  /** Counts what the client has not taken yet; past its limits the stream is cut off. */
  backlog: StreamBacklog;
  logger: Logger;
}

export async function openStream(
  p: Principal,
  kind: StreamKind,
  target: string,
  req: IncomingMessage,
  res: ServerResponse,
  opts: StreamOptions,
): Promise<void> {
  if (kind === "monitor" && p.role !== "standard") {
    throw new AppError(
      "command_refused",
      "NOPERM this user has no permissions to run the 'monitor' command or its subcommand",
    );
  }
  if (kind !== "monitor" && target === "") {
    throw new AppError(
      "bad_request",
      `ERR /${kind} needs a ${kind === "subscribe" ? "channel" : "pattern"}: /${kind}/<name>`,
    );
  }
  const pool = p.db.poolFor(p);
  // Bounded per database (STASHD_KV_MAX_STREAMS): each stream holds a backend connection.
  const leaveStream = p.db.limits.enterStream();
  const conn = await pool.acquire().catch((err: unknown) => {
    leaveStream();
    throw err;
  });
  const giveUp = (err: unknown): never => {
    pool.discard(conn);
    leaveStream();
    throw err;
  };
  let cutOff = (): void => undefined;
  const write = (chunk: string): void => {
    if (res.writableEnded) return;
    res.write(chunk);
    if (!opts.backlog.update(res.writableLength)) cutOff();
  };
  conn.setPushHandler((reply) => {
    const text = eventText(kind, reply);
    if (text !== undefined) write(sseEvent(text));
  });
  const first = await confirm(conn, kind, target).catch(giveUp);
  if (first.kind === "error") giveUp(new AppError("command_refused", upstashError(first.value)));
  res.writeHead(200, {
    ...opts.headers,
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
  write(sseEvent(kind === "monitor" ? '"OK"' : (eventText(kind, first) ?? "")));
  const keepAlive = setInterval(() => write(": keepalive\n\n"), opts.keepAliveMs);
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    clearInterval(keepAlive);
    untrack();
    pool.discard(conn);
    leaveStream();
    opts.backlog.release();
    res.end();
  };
  cutOff = (): void => {
    opts.logger.warn("cut off an event stream whose client does not read", {
      db: p.db.name,
      unsentBytes: res.writableLength,
    });
    end();
    res.destroy();
  };
  res.on("drain", () => {
    if (!ended) opts.backlog.update(res.writableLength);
  });
  const untrack = opts.track(end);
  req.on("close", end);
  res.on("close", end);
  conn.onClose(end);
  // A client gone while the subscription was confirmed fired its close events before the
  // listeners above existed: end now, or the stream would hold its connection forever.
  if (res.destroyed || res.socket?.destroyed !== false) end();
}

function confirm(conn: ExclusiveConnection, kind: StreamKind, target: string): Promise<Reply> {
  if (kind === "monitor") return conn.send(["MONITOR"]);
  return conn.send([kind === "subscribe" ? "SUBSCRIBE" : "PSUBSCRIBE", target]);
}

/**
 * The event's text: `type,field,…` as @upstash/redis splits it (docs/redis-rest-protocol.md §4.2),
 * or a MONITOR line with the client address masked. Undefined for pushes that are not events.
 */
function eventText(kind: StreamKind, reply: Reply): string | undefined {
  if (kind === "monitor") {
    if (reply.kind !== "simple" && reply.kind !== "bulk") return undefined;
    return reply.value.toString().replace(/^(\S+ \[\d+ )[^\]]*\]/, "$10.0.0.0:0]");
  }
  if (reply.kind !== "array") return undefined;
  const [type, ...rest] = reply.value.map((r) =>
    r.kind === "int" ? String(r.value) : r.kind === "bulk" ? r.value.toString() : "",
  );
  return [type, ...rest.map(oneLine)].join(",");
}

/**
 * A channel, pattern or payload as sent: itself, or JSON-quoted when it holds CR or LF. A quoted
 * one also spells its commas `\u002c` (JSON.parse restores them), so the SDK, which splits an
 * event at its first commas, finds the fields where they are.
 */
function oneLine(text: string): string {
  return /[\r\n]/.test(text) ? JSON.stringify(text).replace(/,/g, "\\u002c") : text;
}

/**
 * One event: a single `data:` line and the blank line ending it. CR and LF are the only line ends
 * of SSE; any left in `text` (callers quote fields already) is escaped as `\r` / `\n`, Redis's
 * own MONITOR spelling, so no content can end the line early or start another event.
 */
export function sseEvent(text: string): string {
  return `data: ${text.replace(/\r/g, "\\r").replace(/\n/g, "\\n")}\n\n`;
}
