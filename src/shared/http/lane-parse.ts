/**
 * The fast lane's request parser (lane.ts): one strict spelling of a `POST` over HTTP/1.1, whole
 * in the bytes read so far, to the targets of one service (LaneShape: the KV gateway's `/` and
 * `/pipeline`, the queue's publish and enqueue). Anything it does not read exactly so is left to
 * node:http (undefined), so the two never frame a request differently; WAIT when the bytes are
 * the start of a request the lane would take.
 */
/** A request the lane parsed; the handler decides whether it takes it. */
export interface LaneRequest {
  /** `POST /pipeline` (else `POST /`: the KV shape). */
  readonly pipeline: boolean;
  /** The request target as sent (path and query). */
  readonly target: string;
  readonly authorization: string | undefined;
  readonly encoding: string | undefined;
  readonly responseFormat: string | undefined;
  /**
   * Every field, as node:http's `req.headers` holds it (lower-case names, values without the
   * spaces and tabs around them), for the shapes that read all of them (`allFields`); empty else.
   */
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

/**
 * Which requests a service's lane takes: the exact request lines of `lines`, or (with
 * `prefixes`) any target that starts with one of them and holds only URL bytes (URL_BYTES).
 */
export interface LaneShape {
  /** Whose lane (its metric: `stashd_kv_fast_lane_total`, `stashd_queue_fast_lane_total`). */
  readonly service: "kv" | "queue";
  /** Whole request lines (`POST /` and CRLF...), or the start of them when `prefixes`. */
  readonly lines: readonly Buffer[];
  readonly prefixes: boolean;
  /** Collect every field into `LaneRequest.headers`. */
  readonly allFields: boolean;
}

/** The KV gateway's lane: `POST /` and `POST /pipeline`. */
export const KV_SHAPE: LaneShape = {
  service: "kv",
  lines: [
    Buffer.from("POST / HTTP/1.1\r\n", "latin1"),
    Buffer.from("POST /pipeline HTTP/1.1\r\n", "latin1"),
  ],
  prefixes: false,
  allFields: false,
};

/** The queue's lane: `POST /v2/publish/...` and `POST /v2/enqueue/...` (lower case, as the SDKs send). */
export const QUEUE_SHAPE: LaneShape = {
  service: "queue",
  lines: [Buffer.from("POST /v2/publish/", "latin1"), Buffer.from("POST /v2/enqueue/", "latin1")],
  prefixes: true,
  allFields: true,
};

/** Longest request head the lane reads; a longer one goes to node:http (and its limits). */
export const MAX_HEAD = 8 * 1024;
/** Largest body the lane takes; larger ones stream through node:http's body reader. */
export const LANE_MAX_BODY = 64 * 1024;
/** More header lines than this go to node:http. */
const MAX_HEADER_LINES = 64;

/** parseRequest: the request's first bytes are there, the rest is still to come. */
export const WAIT = Symbol("wait");

/**
 * parseRequest: the head of a request the lane would take is whole, its body (`length` bytes
 * declared) still arriving. `arriving.body` holds what came of it so far.
 */
export interface Arriving {
  readonly arriving: LaneRequest;
  readonly length: number;
}
const PIPELINE_LINE = KV_SHAPE.lines[1] as Buffer;
const VERSION = Buffer.from(" HTTP/1.1\r\n", "latin1");
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
 * 1 for the bytes a target the lane takes may hold: RFC 3986's unreserved and reserved characters
 * and `%`, without `#` (a fragment). node:http takes more (`"`, `{`, `|`...); such a target is
 * left to it.
 */
const URL_BYTES = new Uint8Array(256);
for (const c of "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~:/?[]@!$&'()*+,;=%")
  URL_BYTES[c.charCodeAt(0)] = 1;

/**
 * A whole request at the start of `buf` and where it ends; WAIT when `buf` is the start of one
 * the lane would take (its head still arriving), Arriving when its head is whole and its body
 * still arriving; undefined for node:http.
 */
export function parseRequest(
  buf: Buffer,
  shape: LaneShape = KV_SHAPE,
): { request: LaneRequest; end: number } | Arriving | typeof WAIT | undefined {
  const start = requestLineEnd(buf, shape);
  if (start === WAIT) return buf.length <= MAX_HEAD ? WAIT : undefined;
  if (start === undefined) return undefined;
  const headEnd = buf.indexOf(BLANK_LINE, start - 2);
  if (headEnd === -1) return buf.length <= MAX_HEAD ? WAIT : undefined;
  if (headEnd > MAX_HEAD) return undefined;
  const fields = headEnd < start ? undefined : readFields(buf, start, headEnd, shape.allFields);
  if (fields === undefined) return undefined;
  const bodyStart = headEnd + 4;
  const end = bodyStart + fields.length;
  const request: LaneRequest = {
    pipeline: !shape.prefixes && startsWith(buf, PIPELINE_LINE),
    target: buf.toString("latin1", 5, start - VERSION.length),
    authorization: fields.authorization,
    encoding: fields.encoding,
    responseFormat: fields.responseFormat,
    headers: fields.headers,
    body: buf.subarray(bodyStart, end),
  };
  return end > buf.length ? { arriving: request, length: fields.length } : { request, end };
}

/**
 * Where the request line of a request `shape` takes ends (after its CRLF); WAIT when `buf` is the
 * start of one; undefined when it is not one.
 */
function requestLineEnd(buf: Buffer, shape: LaneShape): number | typeof WAIT | undefined {
  let line: Buffer | undefined;
  for (const l of shape.lines) {
    if (startsWith(buf, l)) line = l;
    else if (isPrefix(buf, l)) return WAIT;
  }
  if (line === undefined) return undefined;
  if (!shape.prefixes) return line.length;
  let at = line.length;
  while (at < buf.length && URL_BYTES[buf[at] as number] === 1) at++;
  if (at === buf.length) return WAIT;
  const rest = buf.subarray(at);
  if (startsWith(rest, VERSION)) return at + VERSION.length;
  return isPrefix(rest, VERSION) ? WAIT : undefined;
}

interface Fields {
  length: number;
  authorization: string | undefined;
  encoding: string | undefined;
  responseFormat: string | undefined;
  headers: Record<string, string>;
}

/** What LaneRequest.headers is for the shapes that do not collect fields. */
const NO_FIELDS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/**
 * The header fields the lane reads, from the field lines in `buf` between `from` and `to` (the
 * blank line), or undefined when any field is one it leaves to node:http: malformed, repeated (of
 * those it reads), `Transfer-Encoding`, `Expect`, `Upgrade`, a `Connection` other than
 * keep-alive, no `Host` or no `Content-Length` (or one over LANE_MAX_BODY).
 *
 * Each line must be `name:value` with a token name (TOKEN_BYTES) and a value of visible ASCII,
 * spaces and tabs only (tested before the spaces and tabs around it are trimmed), lines ending in
 * CRLF. Read byte by byte, without a string per line: this runs for every request. With `all`,
 * every field is also kept in `headers` (collect).
 */
function readFields(buf: Buffer, from: number, to: number, all: boolean): Fields | undefined {
  const f: Fields = {
    length: -1,
    authorization: undefined,
    encoding: undefined,
    responseFormat: undefined,
    headers: all ? {} : NO_FIELDS,
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
    if (all && !collect(f.headers, buf, nameStart, valueStart - 1, valueEnd)) return undefined;
    if (name === HOST) {
      if (host) return undefined;
      host = true;
    }
  }
  if (!host || f.length < 0 || f.length > LANE_MAX_BODY) return undefined;
  return f;
}

/**
 * Adds a field to `headers` as node:http's `req.headers` would hold it; false (node:http's to
 * serve) for a name seen before (node:http joins some repeated fields and drops others) and for
 * `__proto__`, which node:http's headers object does not keep as a field.
 */
function collect(
  headers: Record<string, string>,
  buf: Buffer,
  nameStart: number,
  nameEnd: number,
  valueEnd: number,
): boolean {
  const name = buf.toString("latin1", nameStart, nameEnd).toLowerCase();
  if (name === "__proto__" || Object.hasOwn(headers, name)) return false;
  headers[name] = trimmed(buf, nameEnd + 1, valueEnd);
  return true;
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
