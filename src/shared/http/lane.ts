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
 * Takes a request (true) or declines it (false) with nothing written: node:http then serves it.
 * A request taken is answered through `res` from a later event (never before the handler
 * returns): `res.end` ends the answer; a handler that cannot answer calls `res.done()` without
 * it, which costs the connection. The connection reads its next request only after that.
 */
export type LaneHandler = (req: LaneRequest, res: LaneResponse) => boolean;

/** What a service puts on the lane (server.ts). */
export interface LaneService {
  take: LaneHandler;
  /** Each request taken, once its answer is over (its metrics and log line). */
  answered(res: LaneResponse): void;
}

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
const BLANK_LINE = Buffer.from("\r\n\r\n", "latin1");
const CR = 0x0d;
const LF = 0x0a;
const TAB = 0x09;
const SPACE = 0x20;
const COLON = 0x3a;
/**
 * 1 for the bytes of a field name (an RFC 9110 token). A field's value may hold visible ASCII
 * (0x20-0x7e) and tabs only: no CR, LF, NUL, other control bytes or bytes over 0x7f, which
 * node:http takes or refuses in its own ways.
 */
const TOKEN_BYTES = new Uint8Array(256);
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
  TOKEN_BYTES[c.charCodeAt(0)] = 1;

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
      // A handler that throws (a bug) costs this connection (serveSafely), never the process.
      if (this.service.take(parsed.request, res)) return;
      this.busy = false;
    }
    this.leave(buf);
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
  const headEnd = buf.indexOf(BLANK_LINE, start - 2);
  if (headEnd === -1) return buf.length <= MAX_HEAD ? WAIT : undefined;
  if (headEnd > MAX_HEAD) return undefined;
  const fields = headEnd < start ? undefined : readFields(buf, start, headEnd);
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
 * The header fields the lane reads, from the field lines in `buf` between `from` and `to` (the
 * blank line), or undefined when any field is one it leaves to node:http: malformed, repeated (of
 * those it reads), `Transfer-Encoding`, `Expect`, `Upgrade`, a `Connection` other than
 * keep-alive, no `Host` or no `Content-Length` (or one over LANE_MAX_BODY).
 *
 * Each line must be `name:value` with a token name (TOKEN_BYTES) and a value of visible ASCII,
 * spaces and tabs only (tested before the spaces and tabs around it are trimmed), lines ending in
 * CRLF. Read byte by byte, without a string per line: this runs for every request.
 */
function readFields(buf: Buffer, from: number, to: number): Fields | undefined {
  const f: Fields = {
    length: -1,
    authorization: undefined,
    encoding: undefined,
    responseFormat: undefined,
  };
  let host = false;
  let lines = 0;
  let at = from;
  while (at < to) {
    if (++lines > MAX_HEADER_LINES) return undefined;
    const nameStart = at;
    while (at < to && TOKEN_BYTES[buf[at] as number] === 1) at++;
    if (at === nameStart || at === to || buf[at] !== COLON) return undefined;
    const name = fieldName(buf, nameStart, at);
    const valueStart = ++at;
    for (; at < to; at++) {
      const c = buf[at] as number;
      if (c === CR) break;
      if (c !== TAB && (c < 0x20 || c > 0x7e)) return undefined;
    }
    const valueEnd = at;
    if (at < to) {
      if (buf[at + 1] !== LF) return undefined;
      at += 2;
    }
    if (name !== OTHER && !readField(f, name, buf, valueStart, valueEnd)) return undefined;
    if (name === HOST) {
      if (host) return undefined;
      host = true;
    }
  }
  if (!host || f.length < 0 || f.length > LANE_MAX_BODY) return undefined;
  return f;
}

/** Takes one field the lane reads into `f`; false when the lane leaves the request to node:http. */
function readField(f: Fields, name: number, buf: Buffer, start: number, end: number): boolean {
  switch (name) {
    case CONTENT_LENGTH:
      if (f.length >= 0) return false;
      f.length = contentLength(buf, start, end);
      return f.length >= 0;
    case AUTHORIZATION:
      if (f.authorization !== undefined) return false;
      f.authorization = trimmed(buf, start, end);
      return true;
    case ENCODING:
      if (f.encoding !== undefined) return false;
      f.encoding = trimmed(buf, start, end);
      return true;
    case RESPONSE_FORMAT:
      if (f.responseFormat !== undefined) return false;
      f.responseFormat = trimmed(buf, start, end);
      return true;
    case CONNECTION:
      return isKeepAlive(buf, start, end);
    case HOST:
      return true;
    default:
      return false; // Transfer-Encoding, Expect, Upgrade
  }
}

/** The fields readFields tells apart (by name, case-insensitively); OTHER: any other name. */
const OTHER = 0;
const HOST = 1;
const CONTENT_LENGTH = 2;
const AUTHORIZATION = 3;
const ENCODING = 4;
const RESPONSE_FORMAT = 5;
const CONNECTION = 6;
const REFUSED = 7;
const FIELD_NAMES: [string, number][] = [
  ["host", HOST],
  ["content-length", CONTENT_LENGTH],
  ["authorization", AUTHORIZATION],
  ["upstash-encoding", ENCODING],
  ["upstash-response-format", RESPONSE_FORMAT],
  ["connection", CONNECTION],
  ["transfer-encoding", REFUSED],
  ["expect", REFUSED],
  ["upgrade", REFUSED],
];
/** FIELD_NAMES by length (no two of the same length), lower-case. */
const NAMES_BY_LENGTH = new Map(
  FIELD_NAMES.map(([name, id]) => [name.length, { bytes: Buffer.from(name, "latin1"), id }]),
);

/**
 * Which of FIELD_NAMES the token between `start` and `end` is. Comparing `byte | 0x20` with the
 * lower-case name is exact for token bytes: the names are letters and `-` (0x2d), and no other
 * token byte turns into one of those.
 */
function fieldName(buf: Buffer, start: number, end: number): number {
  const known = NAMES_BY_LENGTH.get(end - start);
  if (known === undefined) return OTHER;
  const bytes = known.bytes;
  for (let i = 0; i < bytes.length; i++) {
    if (((buf[start + i] as number) | 0x20) !== bytes[i]) return OTHER;
  }
  return known.id;
}

/**
 * A Content-Length value as the lane takes it: digits (at most 6) after at most one space,
 * nothing else; -1 for any other spelling (signs, tabs, spaces after, a list), which is
 * node:http's to accept or refuse.
 */
function contentLength(buf: Buffer, start: number, end: number): number {
  if (buf[start] === SPACE) start++;
  if (end === start || end - start > 6) return -1;
  let n = 0;
  for (let i = start; i < end; i++) {
    const d = (buf[i] as number) - 0x30;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/** The value between `start` and `end` without the spaces and tabs around it. */
function trimmed(buf: Buffer, start: number, end: number): string {
  while (start < end && isBlank(buf[start] as number)) start++;
  while (end > start && isBlank(buf[end - 1] as number)) end--;
  return buf.toString("latin1", start, end);
}

function isBlank(c: number): boolean {
  return c === SPACE || c === TAB;
}

const KEEP_ALIVE = Buffer.from("keep-alive", "latin1");

/** Whether a Connection value is `keep-alive` in any case, spaces and tabs around it aside. */
function isKeepAlive(buf: Buffer, start: number, end: number): boolean {
  while (start < end && isBlank(buf[start] as number)) start++;
  while (end > start && isBlank(buf[end - 1] as number)) end--;
  if (end - start !== KEEP_ALIVE.length) return false;
  for (let i = 0; i < KEEP_ALIVE.length; i++) {
    // Exact for visible ASCII: only `-` and letters turn into `-` and letters.
    if (((buf[start + i] as number) | 0x20) !== KEEP_ALIVE[i]) return false;
  }
  return true;
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
  private head = "";
  private chunked = false;
  private closeAfter = false;
  private ended = false;
  private finished = false;

  constructor(private readonly conn: LaneConnection) {}

  /** The connection (for what watches the client going away, kv/commands/blocking.ts). */
  get socket(): Socket {
    return this.conn.socket;
  }

  get destroyed(): boolean {
    return this.conn.socket.destroyed;
  }

  writeHead(status: number, headers: Record<string, string | number> | string[]): this {
    this.statusCode = status;
    let text = statusLine(status);
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
    this.head = `${statusLine(status)}${lines}content-length: ${length}\r\n${headEnd(this.conn.keepAliveMs)}`;
    this.ended = true;
    if (this.conn.socket.writable) this.writeWhole(body, length);
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
    metrics.laneAnswered();
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
