/**
 * The fast lane's request parser (lane.ts): one strict spelling of `POST /` and `POST /pipeline`
 * over HTTP/1.1, whole in the bytes read so far. Anything it does not read exactly so is left to
 * node:http (undefined), so the two never frame a request differently; WAIT when the bytes are
 * the start of a request the lane would take.
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

/** Longest request head the lane reads; a longer one goes to node:http (and its limits). */
export const MAX_HEAD = 8 * 1024;
/** Largest body the lane takes; larger ones stream through node:http's body reader. */
export const LANE_MAX_BODY = 64 * 1024;
/** More header lines than this go to node:http. */
const MAX_HEADER_LINES = 64;

/** parseRequest: the request's first bytes are there, the rest is still to come. */
export const WAIT = Symbol("wait");
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
 * A whole request at the start of `buf` and where it ends; WAIT when `buf` is the start of one
 * the lane would take (its head, or its body, still arriving); undefined for node:http.
 */
export function parseRequest(
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
