import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { AppError } from "../errors.js";
import type { ConnectionCap } from "./connections.js";
import { installLane, type LaneConnections, type LaneService } from "./lane.js";

export interface HttpServerOptions {
  host: string;
  port: number;
  /** Whole-request deadline; slow clients are cut off (408) after it. */
  requestTimeoutMs: number;
  /** Start of error messages on this port (`ERR ` on the KV gateway, as Redis words errors). */
  errorPrefix?: string;
  /** Requests the service takes from the fast lane in front of node:http (lane.ts). */
  lane?: LaneService;
  /** The process's bound on open connections, shared by its listeners (connections.ts). */
  connections?: ConnectionCap | undefined;
}

export interface RunningHttpServer {
  server: http.Server;
  url: string;
  port: number;
  /** Stops accepting, lets in-flight requests finish for up to `graceMs`, then closes the rest. */
  close(graceMs: number): Promise<void>;
}

/** Starts a node:http server and resolves once it listens (port 0 picks a free port). */
export async function listen(
  handler: http.RequestListener,
  opts: HttpServerOptions,
): Promise<RunningHttpServer> {
  const headersTimeout = Math.min(opts.requestTimeoutMs, 60_000);
  const server = http.createServer(
    {
      requestTimeout: opts.requestTimeoutMs,
      headersTimeout,
      // How often Node checks those deadlines (its default, 30 s, would let short ones slip).
      connectionsCheckingInterval: Math.max(50, Math.min(opts.requestTimeoutMs / 4, 30_000)),
      // Must stay below headersTimeout: Node closes idle keep-alive sockets once that passes,
      // and a client trusting a longer advertised keep-alive would reuse a closed socket.
      keepAliveTimeout: Math.min(5_000, headersTimeout / 2),
      // Checked below instead, to answer with a JSON error like every other refusal.
      requireHostHeader: false,
    },
    (req, res) => {
      if (pipelinedTooDeep(req.socket)) req.socket.destroy();
      else if (lacksHost(req)) refuseHostless(res, opts);
      else handler(req, res);
    },
  );
  server.maxHeadersCount = 200;
  // A request arriving in pieces waits on the lane for at most the keep-alive timeout.
  const keepAlive = server.keepAliveTimeout;
  const lanes = opts.lane ? installLane(server, opts.lane, keepAlive, keepAlive) : undefined;
  // After the lane's and node:http's own listeners: a connection shed at once is then closed
  // like any other that its client ends.
  if (opts.connections) server.on("connection", opts.connections.admit);
  server.on("request", trackUnfinished);
  server.on("clientError", (err: NodeJS.ErrnoException, socket: Socket) =>
    answerClientError(err, socket, opts),
  );
  await new Promise<void>((resolve, reject) => {
    const fail = (err: NodeJS.ErrnoException): void => {
      const hint = err.code === "EADDRINUSE" ? " (in use: choose another port, or 0 for any)" : "";
      reject(
        new AppError(
          "startup_failed",
          `cannot listen on ${opts.host}:${opts.port}${hint}: ${err.message}`,
        ),
      );
    };
    server.once("error", fail);
    server.listen(opts.port, opts.host, () => {
      server.off("error", fail);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = opts.host.includes(":") ? `[${opts.host}]` : opts.host;
  const shownHost = host === "0.0.0.0" || host === "[::]" ? "127.0.0.1" : host;
  return {
    server,
    port,
    url: `http://${shownHost}:${port}`,
    close: (graceMs) => closeServer(server, graceMs, lanes),
  };
}

/**
 * An HTTP/1.1 request without a Host header, which a server must refuse (RFC 9112, 3.2): the
 * check node:http makes with `requireHostHeader`, whose answer has an empty body.
 */
function lacksHost(req: http.IncomingMessage): boolean {
  return req.headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor === 1;
}

function refuseHostless(res: http.ServerResponse, opts: HttpServerOptions): void {
  const json = JSON.stringify({
    error: `${opts.errorPrefix ?? ""}malformed HTTP request: no Host`,
  });
  res.writeHead(400, { "content-type": "application/json", connection: "close" });
  res.end(json);
}

/**
 * What node:http itself refuses before a handler runs (headers over 16 KB, malformed requests,
 * the request deadline), answered with the same status Node would use but a JSON `{"error"}` body
 * like every other error, then the connection is closed.
 */
const CLIENT_ERRORS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, "request headers too large"],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, "chunk extensions too large"],
  ERR_HTTP_REQUEST_TIMEOUT: [408, "request timed out: it must arrive whole within"],
};

/** The requests of a connection whose responses are not finished, and what waits for them. */
interface Unfinished {
  requests: Set<http.IncomingMessage>;
  onDone: (() => void) | undefined;
}

const unfinished = new WeakMap<Socket, Unfinished>();

/**
 * Tracks each connection's unfinished responses: pipelined requests (several in one write) are
 * all parsed and started before Node reports a malformed one after them, and their responses,
 * queued by Node in order, must reach the client before that one's 400 closes the connection.
 */
function trackUnfinished(req: http.IncomingMessage, res: http.ServerResponse): void {
  const socket = req.socket;
  let state = unfinished.get(socket);
  if (!state) {
    state = { requests: new Set(), onDone: undefined };
    unfinished.set(socket, state);
  }
  const own = state;
  own.requests.add(req);
  res.once("close", () => {
    own.requests.delete(req);
    if (own.requests.size > 0 || !own.onDone) return;
    const done = own.onDone;
    own.onDone = undefined;
    done();
  });
}

/**
 * Whether the error is about a request after those still being answered: each of them arrived
 * whole. (A body that fails to parse or arrives too slowly belongs to an unfinished request: that
 * one is answered at once, as before.)
 */
function followsAnswered(state: Unfinished | undefined): state is Unfinished {
  if (!state || state.requests.size === 0) return false;
  for (const req of state.requests) if (!req.complete) return false;
  return true;
}

function answerClientError(
  err: NodeJS.ErrnoException,
  socket: Socket,
  opts: HttpServerOptions,
): void {
  if (err.code === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  const state = unfinished.get(socket);
  if (state?.onDone) return; // the parser repeats its error on more data: answered once
  if (followsAnswered(state)) {
    const raw = (err as { rawPacket?: Buffer }).rawPacket;
    // Bounded: a client that never reads its earlier responses is cut off after the deadline.
    const timer = setTimeout(() => socket.destroy(), opts.requestTimeoutMs);
    timer.unref();
    state.onDone = () => {
      clearTimeout(timer);
      if (socket.writable) writeClientError(err, raw, socket, opts);
      else socket.destroy();
    };
    return;
  }
  const pending = (socket as Socket & { _httpMessage?: http.ServerResponse })._httpMessage;
  if (pending?.headersSent) {
    socket.destroy();
    return;
  }
  writeClientError(err, (err as { rawPacket?: Buffer }).rawPacket, socket, opts);
}

/**
 * Requests one connection may have unanswered at once (HTTP/1.1 pipelining); the one after them
 * ends the connection, unanswered, with the answers still to come. Why: node:http parses a whole
 * read (up to 64 KiB: about 2,000 small requests) and starts every request in it before it looks
 * at whether the answers are read, and reads on while they are written: one stranger's
 * connection sending GETs without reading kept 2,000 requests at a time going, and 200 such
 * connections held every other client for tens of seconds (2026-11-28, docs/reliability.md).
 * Ending the connection also stops node:http from parsing the rest of that read. No SDK
 * pipelines requests (undici sends one at a time per connection by default); a client that
 * pipelines deeper than this gets its connection closed.
 */
export const MAX_PIPELINED = 32;

function pipelinedTooDeep(socket: Socket): boolean {
  return (unfinished.get(socket)?.requests.size ?? 0) >= MAX_PIPELINED;
}

/** The JSON answer to what node:http refused, then the end of the connection. */
function writeClientError(
  err: NodeJS.ErrnoException,
  raw: Buffer | undefined,
  socket: Socket,
  opts: HttpServerOptions,
): void {
  const [status, text] = CLIENT_ERRORS[err.code ?? ""] ?? [400, "malformed HTTP request"];
  const detail = status === 408 ? ` ${opts.requestTimeoutMs} ms` : "";
  const json = JSON.stringify({ error: `${opts.errorPrefix ?? ""}${text}${detail}` });
  // A HEAD request gets the headers only (its client would read a body as a next response).
  const body = raw?.subarray(0, 5).toString("latin1") === "HEAD " ? "" : json;
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ""}\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(json)}\r\n` +
      `connection: close\r\n\r\n${body}`,
  );
}

/**
 * Stops accepting, closes idle keep-alive connections at once and each busy one as soon as its
 * last response is sent (checked every IDLE_CHECK_MS: a response finished during the grace, such
 * as a blocked command ended by the shutdown, would otherwise keep its socket open until the
 * client's keep-alive ends), and every connection left after `graceMs`.
 */
async function closeServer(
  server: http.Server,
  graceMs: number,
  lanes: LaneConnections | undefined,
): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  const closeIdle = (): void => {
    server.closeIdleConnections();
    lanes?.closeIdle();
  };
  closeIdle();
  const idle = setInterval(closeIdle, IDLE_CHECK_MS);
  const timer = setTimeout(() => {
    server.closeAllConnections();
    lanes?.closeAll();
  }, graceMs);
  await closed;
  clearInterval(idle);
  clearTimeout(timer);
}

const IDLE_CHECK_MS = 20;
