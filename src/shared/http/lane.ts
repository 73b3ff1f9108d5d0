import http from "node:http";
import type { Socket } from "node:net";
import type { RequestLabel } from "../instrument.js";
import { metrics } from "../metrics.js";
import {
  LANE_MAX_BODY,
  MAX_HEAD,
  parseRequest,
  WAIT,
  type LaneRequest,
  type LaneShape,
} from "./lane-parse.js";
import type { ReplySink } from "./respond.js";

/**
 * A fast lane in front of node:http for the request shape that makes up nearly all of a busy
 * service's traffic (its LaneShape, lane-parse.ts): the KV gateway's `POST /` and
 * `POST /pipeline`, the queue's publishes and enqueues; HTTP/1.1, arriving whole (headers and a
 * Content-Length body) in what the connection has read. Such a request is parsed here and
 * answered on the socket directly, with the bytes node:http would write. Anything else (another
 * method or path, a chunked or partial body, `Expect`, `Upgrade`, `Connection: close`, an odd
 * header, or a request the service's handler declines) hands the connection, with the bytes not
 * yet answered, to node:http for the rest of its life, which serves it as it always did.
 *
 * Why: node:http's per-request objects (IncomingMessage, ServerResponse, their header objects,
 * events and checks) cost about 33 µs of CPU per request here, where the service's own work is
 * under 10 µs and a bare `net` server answers in 17 µs (docs/decisions.md, "KV fast lane" and
 * "Queue publishes on the fast lane").
 *
 * Kept from node:http: keep-alive with its idle timeout (`Keep-Alive: timeout=N` as node:http
 * words it, the connection closed a second after that, as node:http does), requests pipelined
 * on one connection answered in order (the next one read once the answer before it has drained
 * to the client), a half-closed client's connection ended at once, and the server's close (idle
 * connections closed, busy ones after their answer). A request the lane would take that arrives
 * in pieces is waited for, bounded: past `waitMs` from its first bytes, MAX_PIECES reads, or the
 * idle timeout without a byte, the connection goes to node:http with what came, and node:http's
 * header and request timeouts take it from there. Its body is waited for only when the service
 * admits the request from its head (LaneService.admit: the token, the size, the body budget,
 * which counts the declared body meanwhile), as node:http's route refuses or counts it from the
 * head.
 *
 * Safety: the lane takes only one strict spelling of the request (lane-parse.ts) and declines
 * anything unusual to node:http, so the two never frame a request differently (request
 * smuggling); test/security/kv-fast-lane.test.ts compares both on each attack.
 */

/**
 * Takes a request (true) or declines it (false) with nothing written: node:http then serves it.
 * A request taken is answered through `res` from a later event (never before the handler
 * returns): `res.end` ends the answer; a handler that cannot answer calls `res.done()` without
 * it, which costs the connection. The connection reads its next request only after that.
 */
export type LaneHandler = (req: LaneRequest, res: LaneResponse) => boolean;

/** What a service puts on the lane (server.ts). */
export interface LaneService {
  /** The requests the lane parses for it (lane-parse.ts: KV_SHAPE, QUEUE_SHAPE). */
  shape: LaneShape;
  take: LaneHandler;
  /**
   * A request whose head is whole and whose body (`length` bytes declared) is still arriving:
   * whether the lane may wait for it. The function that gives back what the service holds for
   * it meanwhile (its declared body counted in the body budget, as node:http's route counts it
   * from the head), called once, when the body has come (before `take`) or the lane stops
   * waiting; undefined when the service would not take the request (no or a wrong token, over
   * a size, the budget full): node:http then serves it at once, from its head. Without this, a
   * stranger could make the lane hold a body of up to LANE_MAX_BODY bytes per connection,
   * counted nowhere, that node:http would have refused unread.
   */
  admit(head: LaneRequest, length: number, socket: Socket): (() => void) | undefined;
  /** Each request taken, once its answer is over (its metrics and log line). */
  answered(res: LaneResponse): void;
}

/** What `listen` (server.ts) needs of the lane to close the server. */
export interface LaneConnections {
  /** Ends connections waiting for their next request; busy ones end after their answer. */
  closeIdle(): void;
  closeAll(): void;
}

/**
 * Reads a request may take to arrive whole on the lane; one trickled in smaller pieces goes to
 * node:http, whose parser reads incrementally. Bounds the lane's work per request (each read
 * joins and rescans what came: at most MAX_PIECES times MAX_HEAD + LANE_MAX_BODY bytes).
 */
const MAX_PIECES = 16;

/**
 * How much longer than the keep-alive timeout it announces (`Keep-Alive: timeout=N`) an idle
 * connection is kept, as node:http keeps its own (Node 20's HTTP_SERVER_KEEP_ALIVE_TIMEOUT_BUFFER,
 * lib/_http_server.js). A client that reuses a connection at about the announced time (undici
 * retires it 2 s before; one whose event loop was blocked meanwhile does not) would otherwise
 * write its request onto a connection the server is closing: "other side closed", where
 * node:http would have answered (test/kv/lane-keep-alive.test.ts).
 */
const KEEP_ALIVE_GRACE_MS = 1000;

/**
 * Puts the lane in front of `server`'s connections: each new connection is read here first, and
 * given to node:http's own connection listener when the lane hands it over.
 */
export function installLane(
  server: http.Server,
  service: LaneService,
  keepAliveMs: number,
  waitMs: number,
): LaneConnections {
  const nodeListeners = server.listeners("connection") as ((socket: Socket) => void)[];
  server.removeAllListeners("connection");
  const handOver = (socket: Socket): void => {
    for (const listener of nodeListeners) listener.call(server, socket);
  };
  const open = new Set<LaneConnection>();
  server.on("connection", (socket: Socket) => {
    const conn = new LaneConnection(socket, service, keepAliveMs, waitMs, handOver, () =>
      open.delete(conn),
    );
    open.add(conn);
  });
  return {
    closeIdle: () => {
      for (const conn of open) conn.closeWhenIdle();
    },
    closeAll: () => {
      for (const conn of open) conn.destroy();
    },
  };
}

/** One connection while the lane serves it. */
class LaneConnection {
  /** Bytes read and not yet answered (the next requests, pipelined). */
  private pending: Buffer | undefined;
  private busy = false;
  /** End the connection once the answer being written is done (client half-closed, shutdown). */
  private ending = false;
  private gone = false;
  /** When the first bytes of a request still arriving came (0: none is). */
  private arrivingSince = 0;
  /** Reads since the last request parsed whole (MAX_PIECES). */
  private pieces = 0;
  /**
   * Bytes read while an answer is being prepared (requests pipelined behind it), kept apart and
   * joined once when it is done: joining on each read would cost quadratic work for a client
   * trickling bytes behind a blocked command.
   */
  private readonly later: Buffer[] = [];
  private laterBytes = 0;
  /** Gives back what the service holds for the request whose body is arriving (`admit`). */
  private admitted: (() => void) | undefined;

  constructor(
    readonly socket: Socket,
    readonly service: LaneService,
    readonly keepAliveMs: number,
    /** How long a request may take to arrive whole before node:http gets it (and its timeouts). */
    private readonly waitMs: number,
    private readonly handOver: (socket: Socket) => void,
    private readonly forget: () => void,
  ) {
    socket.setNoDelay(true);
    socket.on("data", this.onData);
    socket.on("end", this.onEnd);
    socket.on("error", this.onError);
    socket.on("close", this.onClose);
    socket.on("timeout", this.onTimeout);
    if (keepAliveMs > 0) socket.setTimeout(keepAliveMs + KEEP_ALIVE_GRACE_MS);
  }

  closeWhenIdle(): void {
    if (this.busy) this.ending = true;
    else this.destroy();
  }

  destroy(): void {
    this.socket.destroy();
  }

  /**
   * The answer to the request being served is written (LaneResponse calls it once); `close`: its
   * headers said `Connection: close`.
   */
  answered(close: boolean): void {
    if (this.gone) {
      this.busy = false;
      return;
    }
    if (close) this.ending = true;
    // A client that does not read its answers gets no more of them (node:http, too, stops
    // reading such a client): the next request waits until what was written has drained.
    if (!this.ending && this.socket.writableNeedDrain) {
      this.socket.pause();
      this.socket.once("drain", this.onDrain);
      return;
    }
    this.onDrain();
  }

  /** What was written has drained (or needs not): ends the connection, or reads on. */
  private readonly onDrain = (): void => {
    this.busy = false;
    if (this.gone) return;
    if (this.ending) {
      this.socket.end();
      return;
    }
    this.socket.resume();
    this.joinLater();
    if (this.pending !== undefined) this.serveSafely();
  };

  private readonly onData = (chunk: Buffer): void => {
    if (this.busy) {
      // Requests pipelined behind the one being answered wait here, bounded: reading stops
      // until the answer is written (node:http, too, stops reading a client that does not read).
      this.later.push(chunk);
      this.laterBytes += chunk.length;
      if (this.laterBytes + (this.pending?.length ?? 0) > MAX_HEAD + LANE_MAX_BODY)
        this.socket.pause();
      return;
    }
    this.pending = this.pending === undefined ? chunk : Buffer.concat([this.pending, chunk]);
    this.pieces++;
    this.serveSafely();
  };

  /** Adds what was read while busy to what is pending, as one read. */
  private joinLater(): void {
    if (this.later.length === 0) return;
    if (this.pending !== undefined) this.later.unshift(this.pending);
    this.pending = Buffer.concat(this.later);
    this.later.length = 0;
    this.laterBytes = 0;
    this.pieces = 1;
  }

  /**
   * serveNext, where a bug in the lane (an exception) costs this connection, never the process
   * (this runs in the socket's `data` event, or in a promise callback after an answer).
   */
  private serveSafely(): void {
    try {
      this.serveNext();
    } catch {
      this.destroy();
    }
  }

  /**
   * Serves the first pending request, waits for the rest of one that is still arriving (for at
   * most `waitMs` from its first bytes; its body only when the service admits it), or hands the
   * connection over with what is pending.
   */
  private serveNext(): void {
    const buf = this.pending as Buffer;
    const parsed = parseRequest(buf, this.service.shape);
    if (parsed === WAIT || (parsed !== undefined && "arriving" in parsed)) {
      // A body is waited for only when the service would take its request (admit).
      if (parsed === WAIT || this.admit(parsed.arriving, parsed.length)) {
        const now = Date.now();
        this.arrivingSince ||= now;
        if (now - this.arrivingSince < this.waitMs && this.pieces < MAX_PIECES) return;
      }
    } else if (parsed !== undefined) {
      this.arrivingSince = 0;
      this.pieces = 0;
      this.release();
      const res = new LaneResponse(this);
      this.busy = true;
      this.pending = parsed.end === buf.length ? undefined : buf.subarray(parsed.end);
      // A handler that throws (a bug) costs this connection (serveSafely), never the process.
      if (this.service.take(parsed.request, res)) return;
      this.busy = false;
    }
    this.leave(buf);
  }

  /**
   * Whether the lane waits for the body of the request whose head is `head`: asked of the
   * service once per request (LaneService.admit).
   */
  private admit(head: LaneRequest, length: number): boolean {
    this.admitted ??= this.service.admit(head, length, this.socket);
    return this.admitted !== undefined;
  }

  /** Gives back what `admit` holds, if anything. */
  private release(): void {
    const release = this.admitted;
    this.admitted = undefined;
    release?.();
  }

  /** Gives the connection, with `unread` bytes, to node:http. */
  private leave(unread: Buffer): void {
    this.release();
    metrics.laneHandedOver(this.service.shape.service);
    this.forget();
    const s = this.socket;
    s.off("data", this.onData);
    s.off("end", this.onEnd);
    s.off("error", this.onError);
    s.off("close", this.onClose);
    s.off("timeout", this.onTimeout);
    s.setTimeout(0);
    this.pending = undefined;
    s.unshift(unread);
    this.handOver(s);
  }

  /**
   * A client that half-closes is ended at once, as node:http does (its `httpAllowHalfOpen` is
   * off): an answer still being prepared is dropped, and the close ends a blocked command's wait.
   */
  private readonly onEnd = (): void => {
    this.socket.end();
  };

  private readonly onError = (): void => {
    this.socket.destroy();
  };

  private readonly onClose = (): void => {
    this.gone = true;
    this.release();
    this.pending = undefined;
    this.later.length = 0;
    this.forget();
  };

  /**
   * An idle keep-alive connection past its time is closed; a busy one is not idle; one whose
   * request stopped arriving is handed to node:http, whose request timeouts then apply.
   */
  private readonly onTimeout = (): void => {
    if (this.busy) return;
    if (this.pending === undefined) this.socket.destroy();
    else this.leave(this.pending);
  };
}

/** The `Date` header's value, made once a second (as node:http does). */
let dateText = "";
let dateSecond = -1;
function httpDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(now).toUTCString();
  }
  return dateText;
}

/** `Connection` and `Keep-Alive` as node:http writes them on a connection it keeps. */
function keepAliveLines(keepAliveMs: number): string {
  const lines = "Connection: keep-alive\r\n";
  if (keepAliveMs <= 0) return lines;
  return `${lines}Keep-Alive: timeout=${Math.floor(keepAliveMs / 1000)}\r\n`;
}

/**
 * What ends the head of an answer that keeps its connection: `Date`, `keepAliveLines` and the
 * blank line. Made once a second (all of a server's connections have one keep-alive timeout).
 */
let endText = "";
let endSecond = -1;
let endKeepAliveMs = -1;
function headEnd(keepAliveMs: number): string {
  const date = httpDate();
  if (dateSecond !== endSecond || keepAliveMs !== endKeepAliveMs) {
    endSecond = dateSecond;
    endKeepAliveMs = keepAliveMs;
    endText = `Date: ${date}\r\n${keepAliveLines(keepAliveMs)}\r\n`;
  }
  return endText;
}

const statusLines = new Map<number, string>();
/** `HTTP/1.1 200 OK` and its CRLF, as node:http words it. */
function statusLine(status: number): string {
  let line = statusLines.get(status);
  if (line === undefined) {
    line = `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? "unknown"}\r\n`;
    statusLines.set(status, line);
  }
  return line;
}

/**
 * A response of the lane, written on its connection with the bytes node:http would write: the
 * status line, the given headers, `Date`, `Connection: keep-alive` and `Keep-Alive: timeout=N`
 * (or, with a `connection: close` header, the connection ended after the body), and the body
 * with its Content-Length, or chunked when the headers have none. Headers and a body given to
 * `end` go out in one write.
 */
export class LaneResponse implements ReplySink {
  statusCode = 200;
  headersSent = false;
  /** Names the request for its metrics and log line (RequestMeter). */
  label: RequestLabel | undefined;
  /** When the request was taken (performance.now()). */
  readonly started = performance.now();
  /** Bytes written on the connection for this response so far. */
  bytesWritten = 0;
  /**
   * Header lines (`name: value` and CRLF each) `writeHead` writes first, before its own: the ones
   * a node:http handler sets with `setHeader` before its `writeHead` (the queue's CORS headers).
   * Not used by `endWhole`, whose callers give every line.
   */
  leadingLines = "";
  private head = "";
  private chunked = false;
  private closeAfter = false;
  private ended = false;
  private finished = false;
  /** What the request holds until its answer is over (`hold`). */
  private held: (() => void) | undefined;

  constructor(private readonly conn: LaneConnection) {}

  /**
   * `release` gives back what the request holds (its body's bytes in the in-flight budget):
   * called once, when the answer is over and before the connection reads its next request,
   * which may need the same budget (a pipelined request must not find it still taken).
   */
  hold(release: () => void): void {
    this.held = release;
  }

  /** The connection (for what watches the client going away, kv/commands/blocking.ts). */
  get socket(): Socket {
    return this.conn.socket;
  }

  get destroyed(): boolean {
    return this.conn.socket.destroyed;
  }

  writeHead(status: number, headers: Record<string, string | number> | string[]): this {
    this.statusCode = status;
    let text = statusLine(status) + this.leadingLines;
    let length = false;
    const add = (name: string, value: string | number): void => {
      const lower = name.toLowerCase();
      if (lower === "content-length") length = true;
      if (lower === "connection" && String(value).toLowerCase() === "close") this.closeAfter = true;
      text += `${name}: ${value}\r\n`;
    };
    if (Array.isArray(headers)) {
      for (let i = 0; i + 1 < headers.length; i += 2)
        add(headers[i] as string, headers[i + 1] as string);
    } else {
      for (const name in headers) add(name, headers[name] as string | number);
    }
    text += `Date: ${httpDate()}\r\n`;
    if (!this.closeAfter) text += keepAliveLines(this.conn.keepAliveMs);
    if (!length) {
      this.chunked = true;
      text += "Transfer-Encoding: chunked\r\n";
    }
    this.head = `${text}\r\n`;
    return this;
  }

  /**
   * `writeHead(status, headers)` and `end(body)` in one step, for headers already written out:
   * `lines` are the header lines (`name: value` and CRLF each) that writeHead would write for
   * them, with no Content-Length (added here), Connection or Transfer-Encoding among them.
   */
  endWhole(status: number, lines: string, body: string | Buffer): void {
    if (this.ended) return;
    this.statusCode = status;
    const length = typeof body === "string" ? Buffer.byteLength(body) : body.length;
    this.head = this.wholeHead(status, lines, length);
    this.ended = true;
    if (this.conn.socket.writable) this.writeWhole(body, length);
    this.done();
  }

  /**
   * The head `endWhole(status, lines, body)` writes before a body of `length` bytes (ASCII), for
   * a caller that renders the body behind it in one buffer and ends with `endHeaded`.
   */
  wholeHead(status: number, lines: string, length: number): string {
    return `${statusLine(status)}${lines}content-length: ${length}\r\n${headEnd(this.conn.keepAliveMs)}`;
  }

  /**
   * `endWhole` of a response already whole in `bytes`: the head from `wholeHead(status, …)`
   * followed by the body it announces. Written as it is, in one write: no copy of the body.
   */
  endHeaded(status: number, bytes: Buffer): void {
    if (this.ended) return;
    this.statusCode = status;
    this.ended = true;
    if (this.conn.socket.writable) {
      this.headersSent = true;
      this.bytesWritten += bytes.length;
      this.conn.socket.write(bytes);
    }
    this.done();
  }

  write(chunk: string | Buffer): boolean {
    const socket = this.conn.socket;
    if (!socket.writable) return true; // gone: nothing to wait for (the caller checks destroyed)
    const size = typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk.length;
    if (size === 0) return socket.writableLength === 0 || !socket.writableNeedDrain;
    socket.cork();
    this.flushHead("");
    if (this.chunked) this.send(`${size.toString(16)}\r\n`);
    let ok = socket.write(chunk);
    this.bytesWritten += size;
    if (this.chunked) ok = this.send("\r\n");
    socket.uncork();
    return ok;
  }

  end(body?: string | Buffer): void {
    if (this.ended) return;
    this.ended = true;
    const socket = this.conn.socket;
    if (socket.writable) {
      if (!this.headersSent && !this.chunked && body !== undefined) {
        this.writeWhole(body, typeof body === "string" ? Buffer.byteLength(body) : body.length);
      } else {
        socket.cork();
        if (body !== undefined) this.write(body);
        const last = this.chunked ? "0\r\n\r\n" : "";
        if (this.headersSent) this.send(last);
        else this.flushHead(last);
        socket.uncork();
      }
    }
    this.done();
  }

  cork(): void {
    this.conn.socket.cork();
  }

  uncork(): void {
    this.conn.socket.uncork();
  }

  on(event: "drain" | "close", listener: () => void): this {
    this.conn.socket.on(event, listener);
    return this;
  }

  off(event: "drain" | "close", listener: () => void): this {
    this.conn.socket.off(event, listener);
    return this;
  }

  destroy(): void {
    this.conn.destroy();
  }

  /**
   * The answer is over (ended, or given up: then the connection is destroyed): it is counted
   * (LaneService.answered), and the connection may read its next request. Once; later calls
   * do nothing.
   */
  done(): void {
    if (this.finished) return;
    this.finished = true;
    if (!this.ended) this.conn.destroy();
    const release = this.held;
    this.held = undefined;
    release?.();
    metrics.laneAnswered(this.conn.service.shape.service);
    this.conn.service.answered(this);
    this.conn.answered(this.closeAfter);
  }

  /** Headers and the whole body (`length` bytes) in one write (one syscall). */
  private writeWhole(body: string | Buffer, length: number): void {
    const socket = this.conn.socket;
    this.headersSent = true;
    this.bytesWritten += this.head.length + length;
    if (typeof body === "string") {
      socket.write(this.head + body);
      return;
    }
    const out = Buffer.allocUnsafe(this.head.length + body.length);
    out.write(this.head, 0, "latin1");
    body.copy(out, this.head.length);
    socket.write(out);
  }

  /** The headers, followed by `rest` when they were not written yet. */
  private flushHead(rest: string): void {
    if (this.headersSent) return;
    this.headersSent = true;
    this.send(this.head + rest);
  }

  /** Text of the HTTP framing (ASCII), counted. */
  private send(text: string): boolean {
    this.bytesWritten += text.length;
    return this.conn.socket.write(text, "latin1");
  }
}
