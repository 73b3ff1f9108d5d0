import http from "node:http";
import type { Socket } from "node:net";
import type { RequestLabel } from "../instrument.js";
import { metrics } from "../metrics.js";
import type { ReplySink } from "./respond.js";

/**
 * A fast lane in front of node:http for the one request shape that makes up nearly all of a busy
 * KV gateway's traffic: `POST /` or `POST /pipeline`, HTTP/1.1, arriving whole (headers and a
 * Content-Length body) in what the connection has read. Such a request is parsed here and
 * answered on the socket directly, with the bytes node:http would write. Anything else (another
 * method or path, a chunked or partial body, `Expect`, `Upgrade`, `Connection: close`, an odd
 * header, or a request the service's handler declines) hands the connection, with the bytes not
 * yet answered, to node:http for the rest of its life, which serves it as it always did.
 *
 * Why: node:http's per-request objects (IncomingMessage, ServerResponse, their header objects,
 * events and checks) cost about 33 µs of CPU per request here, where the service's own work is
 * under 10 µs and a bare `net` server answers in 17 µs (docs/decisions.md, "KV fast lane").
 *
 * Kept from node:http: keep-alive with its idle timeout (`Keep-Alive: timeout=N` as node:http
 * words it), requests pipelined on one connection answered in order (the next one read once
 * the answer before it has drained to the client), a half-closed client's
 * connection ended at once, and the server's close (idle connections closed, busy
 * ones after their answer). A request the lane would take that arrives in pieces is waited for,
 * bounded: past `waitMs` from its first bytes, MAX_PIECES reads, or the keep-alive timeout
 * without a byte, the connection goes to node:http with what came, and node:http's header and
 * request timeouts take it from there.
 *
 * Safety: the lane takes only one strict spelling of the request (readFields) and declines
 * anything unusual to node:http, so the two never frame a request differently (request
 * smuggling); test/security/kv-fast-lane.test.ts compares both on each attack.
 */

/** A request the lane parsed; the handler decides whether it takes it. */
export interface LaneRequest {
  /** `POST /pipeline` (else `POST /`). */
  readonly pipeline: boolean;
  readonly authorization: string | undefined;
  readonly encoding: string | undefined;
  readonly responseFormat: string | undefined;
  readonly body: Buffer;
}

/**
 * Takes a request, answering it through `res` (the promise settles when it is answered), or
 * declines it (undefined) with nothing written: node:http then serves it.
 */
export type LaneHandler = (req: LaneRequest, res: LaneResponse) => Promise<void> | undefined;

/** What `listen` (server.ts) needs of the lane to close the server. */
export interface LaneConnections {
  /** Ends connections waiting for their next request; busy ones end after their answer. */
  closeIdle(): void;
  closeAll(): void;
}

/** Longest request head the lane reads; a longer one goes to node:http (and its limits). */
const MAX_HEAD = 8 * 1024;
/** Largest body the lane takes; larger ones stream through node:http's body reader. */
export const LANE_MAX_BODY = 64 * 1024;
/** More header lines than this go to node:http. */
const MAX_HEADER_LINES = 64;
/**
 * Reads a request may take to arrive whole on the lane; one trickled in smaller pieces goes to
 * node:http, whose parser reads incrementally. Bounds the lane's work per request (each read
 * joins and rescans what came: at most MAX_PIECES times MAX_HEAD + LANE_MAX_BODY bytes).
 */
const MAX_PIECES = 16;

/** parseRequest: the request's first bytes are there, the rest is still to come. */
const WAIT = Symbol("wait");
const ROOT = Buffer.from("POST / HTTP/1.1\r\n", "latin1");
const PIPELINE = Buffer.from("POST /pipeline HTTP/1.1\r\n", "latin1");
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/**
 * A field's value with the spaces and tabs around it: visible ASCII, space and tab only (no CR,
 * LF, NUL, other control bytes or bytes over 0x7f, which node:http takes or refuses in its own
 * ways). Tested before trimming, so `trim()` then only removes spaces and tabs.
 */
const FIELD_VALUE = /^[\t\x20-\x7e]*$/;
/**
 * The lane's Content-Length as written after the colon: digits, after at most one space. Any
 * other spelling (signs, tabs, spaces after, a list) is node:http's to accept or refuse.
 */
const CONTENT_LENGTH = /^ ?[0-9]{1,6}$/;

/**
 * Puts the lane in front of `server`'s connections: each new connection is read here first, and
 * given to node:http's own connection listener when the lane hands it over.
 */
export function installLane(
  server: http.Server,
  handler: LaneHandler,
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
    const conn = new LaneConnection(socket, handler, keepAliveMs, waitMs, handOver, () =>
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

  constructor(
    readonly socket: Socket,
    private readonly handler: LaneHandler,
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
    if (keepAliveMs > 0) socket.setTimeout(keepAliveMs);
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
   * most `waitMs` from its first bytes), or hands the connection over with what is pending.
   */
  private serveNext(): void {
    const buf = this.pending as Buffer;
    const parsed = parseRequest(buf);
    if (parsed === WAIT) {
      const now = Date.now();
      this.arrivingSince ||= now;
      if (now - this.arrivingSince < this.waitMs && this.pieces < MAX_PIECES) return;
    } else if (parsed !== undefined) {
      this.arrivingSince = 0;
      this.pieces = 0;
      const res = new LaneResponse(this);
      this.busy = true;
      this.pending = parsed.end === buf.length ? undefined : buf.subarray(parsed.end);
      const answering = this.answer(parsed.request, res);
      if (answering !== undefined) {
        metrics.laneAnswered();
        answering.then(res.done, () => {
          this.destroy();
          res.done();
        });
        return;
      }
      this.busy = false;
    }
    this.leave(buf);
  }

  /**
   * The handler's answer to a request; a handler that throws instead of rejecting (a bug) costs
   * this connection, never the process (this runs in the socket's `data` event).
   */
  private answer(req: LaneRequest, res: LaneResponse): Promise<void> | undefined {
    try {
      return this.handler(req, res);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  /** Gives the connection, with `unread` bytes, to node:http. */
  private leave(unread: Buffer): void {
    metrics.laneHandedOver();
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

/**
 * A whole request at the start of `buf` and where it ends; WAIT when `buf` is the start of one
 * the lane would take (its head, or its body, still arriving); undefined for node:http.
 */
function parseRequest(
  buf: Buffer,
): { request: LaneRequest; end: number } | typeof WAIT | undefined {
  const pipeline = startsWith(buf, PIPELINE);
  if (!pipeline && !startsWith(buf, ROOT)) {
    return isPrefix(buf, ROOT) || isPrefix(buf, PIPELINE) ? WAIT : undefined;
  }
  const start = pipeline ? PIPELINE.length : ROOT.length;
  const headEnd = buf.indexOf("\r\n\r\n", start - 2, "latin1");
  if (headEnd === -1) return buf.length <= MAX_HEAD ? WAIT : undefined;
  if (headEnd > MAX_HEAD) return undefined;
  const fields = headEnd < start ? undefined : readFields(buf.toString("latin1", start, headEnd));
  if (fields === undefined) return undefined;
  const bodyStart = headEnd + 4;
  const end = bodyStart + fields.length;
  if (end > buf.length) return WAIT;
  const request: LaneRequest = {
    pipeline,
    authorization: fields.authorization,
    encoding: fields.encoding,
    responseFormat: fields.responseFormat,
    body: buf.subarray(bodyStart, end),
  };
  return { request, end };
}

interface Fields {
  length: number;
  authorization: string | undefined;
  encoding: string | undefined;
  responseFormat: string | undefined;
}

/**
 * The header fields the lane reads, or undefined when any field is one it leaves to node:http:
 * malformed, repeated (of those it reads), `Transfer-Encoding`, `Expect`, `Upgrade`, a
 * `Connection` other than keep-alive, no `Host` or no `Content-Length` (or one over LANE_MAX_BODY).
 */
function readFields(head: string): Fields | undefined {
  const lines = head.split("\r\n");
  if (lines.length > MAX_HEADER_LINES) return undefined;
  let length: number | undefined;
  let host = false;
  let authorization: string | undefined;
  let encoding: string | undefined;
  let responseFormat: string | undefined;
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon <= 0) return undefined;
    const name = line.slice(0, colon);
    const raw = line.slice(colon + 1);
    if (!TOKEN.test(name) || !FIELD_VALUE.test(raw)) return undefined;
    const value = raw.trim();
    switch (name.toLowerCase()) {
      case "content-length":
        if (length !== undefined || !CONTENT_LENGTH.test(raw)) return undefined;
        length = Number(raw);
        break;
      case "host":
        if (host) return undefined;
        host = true;
        break;
      case "authorization":
        if (authorization !== undefined) return undefined;
        authorization = value;
        break;
      case "upstash-encoding":
        if (encoding !== undefined) return undefined;
        encoding = value;
        break;
      case "upstash-response-format":
        if (responseFormat !== undefined) return undefined;
        responseFormat = value;
        break;
      case "connection":
        if (value.toLowerCase() !== "keep-alive") return undefined;
        break;
      case "transfer-encoding":
      case "expect":
      case "upgrade":
        return undefined;
    }
  }
  if (!host || length === undefined || length > LANE_MAX_BODY) return undefined;
  return { length, authorization, encoding, responseFormat };
}

/** Whether all of `buf` (shorter than `text`) is the start of `text`. */
function isPrefix(buf: Buffer, text: Buffer): boolean {
  if (buf.length >= text.length) return false;
  for (let i = 0; i < buf.length; i++) if (buf[i] !== text[i]) return false;
  return true;
}

function startsWith(buf: Buffer, prefix: Buffer): boolean {
  if (buf.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (buf[i] !== prefix[i]) return false;
  return true;
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
  readonly started = process.hrtime.bigint();
  private readonly bytesBefore: number;
  private head = "";
  private chunked = false;
  private closeAfter = false;
  private ended = false;
  private finished = false;

  constructor(private readonly conn: LaneConnection) {
    this.bytesBefore = conn.socket.bytesWritten;
  }

  /** The connection (for what watches the client going away, kv/commands/blocking.ts). */
  get socket(): Socket {
    return this.conn.socket;
  }

  get destroyed(): boolean {
    return this.conn.socket.destroyed;
  }

  /** Bytes written on the connection for this response so far. */
  get bytesWritten(): number {
    return this.conn.socket.bytesWritten - this.bytesBefore;
  }

  writeHead(status: number, headers: Record<string, string | number> | string[]): this {
    this.statusCode = status;
    let text = `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? "unknown"}\r\n`;
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
    if (!this.closeAfter) {
      text += "Connection: keep-alive\r\n";
      const seconds = Math.floor(this.conn.keepAliveMs / 1000);
      if (this.conn.keepAliveMs > 0) text += `Keep-Alive: timeout=${seconds}\r\n`;
    }
    if (!length) {
      this.chunked = true;
      text += "Transfer-Encoding: chunked\r\n";
    }
    this.head = `${text}\r\n`;
    return this;
  }

  write(chunk: string | Buffer): boolean {
    const socket = this.conn.socket;
    if (!socket.writable) return true; // gone: nothing to wait for (the caller checks destroyed)
    const size = typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk.length;
    if (size === 0) return socket.writableLength === 0 || !socket.writableNeedDrain;
    socket.cork();
    this.flushHead("");
    if (this.chunked) socket.write(`${size.toString(16)}\r\n`, "latin1");
    let ok = socket.write(chunk);
    if (this.chunked) ok = socket.write("\r\n", "latin1");
    socket.uncork();
    return ok;
  }

  end(body?: string | Buffer): void {
    if (this.ended) return;
    this.ended = true;
    const socket = this.conn.socket;
    if (socket.writable) {
      if (!this.headersSent && !this.chunked && body !== undefined) this.writeWhole(body);
      else {
        socket.cork();
        if (body !== undefined) this.write(body);
        const last = this.chunked ? "0\r\n\r\n" : "";
        if (this.headersSent) socket.write(last, "latin1");
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

  /** The answer is over (ended, or given up): the connection may read its next request. */
  readonly done = (): void => {
    if (this.finished) return;
    this.finished = true;
    if (!this.ended) this.conn.destroy();
    this.conn.answered(this.closeAfter);
  };

  /** Headers and the whole body in one write (one syscall). */
  private writeWhole(body: string | Buffer): void {
    const socket = this.conn.socket;
    this.headersSent = true;
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
    this.conn.socket.write(this.head + rest, "latin1");
  }
}
