import type { IncomingMessage, ServerResponse } from "node:http";
import { AppError } from "../shared/errors.js";
import type { ExclusiveConnection } from "../shared/redis/backend.js";
import type { Logger } from "../shared/log.js";
import type { Reply } from "../shared/redis/resp.js";
import type { Principal } from "./database.js";
import { upstashError } from "./reply.js";
import type { StreamBacklog } from "./reply-buffers.js";

/**
 * Server-sent event bridges for `/subscribe/<channel>`, `/psubscribe/<pattern>` and `/monitor`.
 * Each stream holds its own backend connection, released as soon as the client goes away (or
 * the stream is closed on shutdown). Lines, as @upstash/redis parses them:
 *   data: subscribe,<channel>,<count>        data: message,<channel>,<payload>
 *   data: psubscribe,<pattern>,<count>       data: pmessage,<pattern>,<channel>,<payload>
 *   data: "OK"  then one Redis MONITOR line per command, client address masked as 0.0.0.0:0
 * Payloads are raw text; one containing a line break is sent JSON-quoted instead, which the SDK
 * (JSON-parsing every payload) turns back into the exact original. Idle streams get a
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
  const conn = await pool.acquire();
  let cutOff = (): void => undefined;
  const write = (line: string): void => {
    if (res.writableEnded) return;
    res.write(`${line}\n\n`);
    if (!opts.backlog.update(res.writableLength)) cutOff();
  };
  conn.setPushHandler((reply) => {
    const line = eventLine(kind, reply);
    if (line !== undefined) write(line);
  });
  const first = await confirm(conn, kind, target).catch((err: unknown) => {
    pool.discard(conn);
    throw err;
  });
  if (first.kind === "error") {
    pool.discard(conn);
    throw new AppError("command_refused", upstashError(first.value));
  }
  res.writeHead(200, {
    ...opts.headers,
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
  write(kind === "monitor" ? 'data: "OK"' : (eventLine(kind, first) ?? ""));
  const keepAlive = setInterval(() => write(": keepalive"), opts.keepAliveMs);
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    clearInterval(keepAlive);
    untrack();
    pool.discard(conn);
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
}

function confirm(conn: ExclusiveConnection, kind: StreamKind, target: string): Promise<Reply> {
  if (kind === "monitor") return conn.send(["MONITOR"]);
  return conn.send([kind === "subscribe" ? "SUBSCRIBE" : "PSUBSCRIBE", target]);
}

function eventLine(kind: StreamKind, reply: Reply): string | undefined {
  if (kind === "monitor") {
    if (reply.kind !== "simple" && reply.kind !== "bulk") return undefined;
    return `data: ${reply.value.toString().replace(/^(\S+ \[\d+ )[^\]]*\]/, "$10.0.0.0:0]")}`;
  }
  if (reply.kind !== "array") return undefined;
  const parts = reply.value.map((r) =>
    r.kind === "int" ? r.value : r.kind === "bulk" ? r.value.toString() : "",
  );
  const last = parts.length - 1;
  if (parts[0] === "message" || parts[0] === "pmessage")
    parts[last] = payloadText(parts[last] ?? "");
  return `data: ${parts.join(",")}`;
}

function payloadText(payload: string): string {
  return /[\r\n]/.test(payload) ? JSON.stringify(payload) : payload;
}
