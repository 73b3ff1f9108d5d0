/**
 * RESP2: encoding commands and parsing replies, byte-exact.
 *
 * Replies keep strings as Buffers and integers as their decimal text, so nothing is lost on the
 * way from Redis to the client (binary values, integers beyond 2^53). `serializeReply` rebuilds the
 * exact bytes Redis sent, which is what `Upstash-Response-Format: resp2` returns.
 */

export type Reply =
  | { readonly kind: "simple"; readonly value: Buffer }
  | { readonly kind: "bulk"; readonly value: Buffer }
  | { readonly kind: "int"; readonly value: string }
  | { readonly kind: "error"; readonly value: string }
  | { readonly kind: "nil"; readonly array: boolean }
  | { readonly kind: "array"; readonly value: Reply[] };

export type Arg = string | Buffer;

/** What a top-level reply handed to RespParser's `onValue` is (and a RawReplies entry). */
export const RAW_BULK = 0;
export const RAW_SIMPLE = 1;
export const RAW_INT = 2;
export const RAW_NIL = 3;
/** A RawReplies entry kept as its Reply object: an error, an array, a nil array. */
export const RAW_OBJECT = 4;
export type RawKind =
  typeof RAW_BULK | typeof RAW_SIMPLE | typeof RAW_INT | typeof RAW_NIL | typeof RAW_OBJECT;
/** The kinds `onValue` gets. */
export type ValueKind = Exclude<RawKind, typeof RAW_OBJECT>;

const CRLF = "\r\n";
const CR = 13;
const LF = 10;

/** Encodes one command as a RESP array of bulk strings. */
export function encodeCommand(args: readonly Arg[]): Buffer {
  return encodeCommands([args]);
}

/**
 * Encodes commands as consecutive RESP arrays into one buffer of the exact size: a first pass adds
 * up the lengths, the second writes headers digit by digit and copies the arguments in, with no
 * intermediate strings or buffers. Short ASCII strings (command names, keys: nearly every
 * argument) are measured and copied by a loop in JS; longer or other strings by the native
 * UTF-8 conversion, whose per-call cost only pays off on longer ones. Measured on 100 GETs per
 * call: about a third of the time of joining one text and converting it once (benchmarks-log.md,
 * 2026-11-26 night), which was itself cheaper than a Buffer per argument.
 */
export function encodeCommands(commands: readonly (readonly Arg[])[]): Buffer {
  return encodeCommandPieces(commands, Infinity)[0] as Buffer;
}

/** Buffer arguments from this size on are not copied by encodeCommandPieces' default. */
export const LARGE_ARG = 64 * 1024;

/**
 * encodeCommands, except that Buffer arguments of `large` bytes or more are not copied: the
 * encoding is returned as pieces to write in order, such an argument being a piece of its own
 * (the buffer itself). A large message body thus costs no second copy on its way to Redis.
 */
export function encodeCommandPieces(
  commands: readonly (readonly Arg[])[],
  large = LARGE_ARG,
): Buffer[] {
  let size = 0;
  let count = 0;
  for (const args of commands) count += args.length;
  const lengths = argumentLengths(count);
  let k = 0;
  for (const args of commands) {
    size += 3 + digitCount(args.length);
    for (const arg of args) {
      const n = typeof arg === "string" ? utf8Length(arg) : arg.length;
      lengths[k++] = n;
      size += 5 + digitCount(n) + (typeof arg !== "string" && n >= large ? 0 : n);
    }
  }
  const out = Buffer.allocUnsafe(size);
  const pieces: Buffer[] = [];
  let from = 0;
  let at = 0;
  k = 0;
  for (const args of commands) {
    out[at++] = 0x2a; // *
    at = writeDigits(out, at, args.length);
    for (const arg of args) {
      const n = lengths[k++] as number;
      out[at++] = 0x24; // $
      at = writeDigits(out, at, n);
      if (typeof arg !== "string") {
        if (n >= large) {
          pieces.push(out.subarray(from, at), arg);
          from = at;
        } else at += arg.copy(out, at);
      } else if (n === arg.length && n <= SHORT_STRING) at = copyAscii(out, at, arg);
      else at += out.write(arg, at, n, "utf8");
      out[at++] = CR;
      out[at++] = LF;
    }
  }
  pieces.push(from === 0 ? out : out.subarray(from, at));
  return pieces;
}

/**
 * Commands already encoded as RESP (kv/fast/encoded-pipeline.ts), sent as they are: `count` commands, so
 * `count` replies are owed for them (RedisConnection.exchangeEncoded).
 */
export class EncodedCommands {
  constructor(
    readonly bytes: Buffer,
    readonly count: number,
  ) {}
}

/**
 * A flush's commands where some came already encoded, in their order, as one buffer: runs of
 * plain commands through encodeCommands, EncodedCommands as their bytes (one alone: no copy).
 */
export function encodeMixed(entries: readonly (readonly Arg[] | EncodedCommands)[]): Buffer {
  const parts: Buffer[] = [];
  let run: (readonly Arg[])[] = [];
  for (const entry of entries) {
    if (!(entry instanceof EncodedCommands)) {
      run.push(entry);
      continue;
    }
    if (run.length > 0) parts.push(encodeCommands(run));
    run = [];
    parts.push(entry.bytes);
  }
  if (run.length > 0) parts.push(encodeCommands(run));
  return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
}

/**
 * Scratch space for encodeCommands' first pass (each argument's byte length), kept between calls
 * up to SCRATCH_MAX entries; a larger flush gets its own, dropped after it.
 */
let lengthsScratch = new Float64Array(1024);
const SCRATCH_MAX = 65536;

function argumentLengths(count: number): Float64Array {
  if (count <= lengthsScratch.length) return lengthsScratch;
  if (count > SCRATCH_MAX) return new Float64Array(count);
  lengthsScratch = new Float64Array(SCRATCH_MAX);
  return lengthsScratch;
}

/** Strings up to this length are measured and copied in JS (see encodeCommands). */
const SHORT_STRING = 64;

/**
 * The UTF-8 length of `text`. A UTF-16 string has as many UTF-8 bytes as code units exactly when
 * every unit is ASCII (any other unit, paired surrogates and lone ones included, takes more), so
 * `n === text.length` also says "all ASCII".
 */
function utf8Length(text: string): number {
  if (text.length > SHORT_STRING) return Buffer.byteLength(text);
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) >= 0x80) return Buffer.byteLength(text);
  }
  return text.length;
}

/** Copies an all-ASCII string into `out` at `at`; returns the position after it. */
function copyAscii(out: Buffer, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) out[at++] = text.charCodeAt(i);
  return at;
}

function digitCount(n: number): number {
  if (n < 10) return 1;
  if (n < 100) return 2;
  let count = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    count++;
  }
  return count;
}

/** Writes `n` in decimal and CRLF at `at`; returns the position after them. */
function writeDigits(out: Buffer, at: number, n: number): number {
  if (n < 10) {
    out[at] = 0x30 + n;
    out[at + 1] = CR;
    out[at + 2] = LF;
    return at + 3;
  }
  const end = at + digitCount(n);
  for (let i = end - 1; i >= at; i--) {
    out[i] = 0x30 + (n % 10);
    n = Math.floor(n / 10);
  }
  out[end] = CR;
  out[end + 1] = LF;
  return end + 2;
}

/**
 * Bytes of a reply's strings (bulk, simple, error) plus one per element, nested ones included:
 * what a reply holds in memory (kv/reply/reply-buffers.ts) and what decides whether it renders in one
 * piece (kv/reply/reply.ts).
 */
export function elementBytes(reply: Reply): number {
  switch (reply.kind) {
    case "simple":
    case "bulk":
    case "error":
      return 1 + reply.value.length;
    case "array": {
      let bytes = 1;
      for (const item of reply.value) bytes += elementBytes(item);
      return bytes;
    }
    default:
      return 1;
  }
}

/** The exact RESP2 bytes of a parsed reply. */
export function serializeReply(reply: Reply): Buffer {
  return Buffer.concat([...replyPieces(reply)]);
}

/** The exact RESP2 bytes of a parsed reply, piece by piece (values are not copied). */
export function* replyPieces(reply: Reply): Generator<Buffer> {
  switch (reply.kind) {
    case "simple":
      yield Buffer.from("+");
      yield reply.value;
      yield Buffer.from(CRLF);
      return;
    case "bulk":
      yield Buffer.from(`$${reply.value.length}${CRLF}`);
      yield reply.value;
      yield Buffer.from(CRLF);
      return;
    case "int":
      yield Buffer.from(`:${reply.value}${CRLF}`);
      return;
    case "error":
      yield Buffer.from(`-${reply.value}${CRLF}`);
      return;
    case "nil":
      yield Buffer.from(reply.array ? `*-1${CRLF}` : `$-1${CRLF}`);
      return;
    case "array":
      yield Buffer.from(`*${reply.value.length}${CRLF}`);
      for (const item of reply.value) yield* replyPieces(item);
  }
}

/** See RespParser's constructor. */
export type OnValue = (
  kind: ValueKind,
  buf: Buffer,
  start: number,
  end: number,
  cost: number,
) => void;

interface Frame {
  items: Reply[];
  remaining: number;
}

const EMPTY = Buffer.alloc(0);

/**
 * What one reply element costs against a reply budget besides its bytes on the wire: roughly the
 * memory of the parsed object, so a reply of millions of tiny elements is bounded like one of a
 * few large strings.
 */
export const ELEMENT_OVERHEAD_BYTES = 48;

/** Start of the error reply that stands in for a reply over its budget (see `RespParser`). */
export const REPLY_TOO_LARGE = "ERR reply too large";

/**
 * Incremental RESP2 parser. Feed it socket chunks; it calls `onReply` for each complete top-level
 * reply with its cost (wire bytes plus ELEMENT_OVERHEAD_BYTES per element). Resumable: a partial
 * array keeps its parsed elements, and a large bulk string is collected chunk by chunk and joined
 * once, so big replies cost linear time.
 *
 * Budget: `limitOf()` is asked at the start of each top-level reply. A reply that would cost more
 * is not kept: its elements are dropped as they arrive (a bulk string over the budget is skipped
 * without being buffered), and `onReply` gets an error reply starting with REPLY_TOO_LARGE in its
 * place (costing ELEMENT_OVERHEAD_BYTES), so the stream stays in step and memory stays bounded by
 * the budget.
 */
export class RespParser {
  private buf: Buffer = EMPTY;
  private pos = 0;
  private readonly stack: Frame[] = [];
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private needed = 0;
  /** Bytes of a dropped bulk string still to come. */
  private skip = 0;
  /** Cost so far of the top-level reply being parsed, its budget, and whether it is dropped. */
  private cost = 0;
  private limit = Infinity;
  private dropping = false;

  constructor(
    private readonly onReply: (reply: Reply, cost: number) => void,
    private readonly limitOf: () => number = () => Infinity,
    /**
     * When given, a top-level bulk string, simple string, integer or nil within its budget comes
     * here instead of to `onReply`, as where its value is: `buf[start, end)` (the bytes of a
     * string, the digits of an integer; nothing for a nil). No Reply object is made for it, so a
     * caller that copies the value on (raw-replies.ts) saves an object and a Buffer view per
     * reply; `valueReply` (raw-replies.ts) makes the object `onReply` would have had.
     */
    private readonly onValue?: OnValue,
  ) {}

  feed(chunk: Buffer): void {
    if (this.skip > 0) {
      if (chunk.length <= this.skip) {
        this.skip -= chunk.length;
        return;
      }
      chunk = chunk.subarray(this.skip);
      this.skip = 0;
    }
    if (this.needed > 0) {
      this.pending.push(chunk);
      this.pendingBytes += chunk.length;
      if (this.pendingBytes < this.needed) return;
      this.buf = Buffer.concat([this.buf.subarray(this.pos), ...this.pending]);
      this.pending = [];
      this.needed = 0;
    } else if (this.pos >= this.buf.length) {
      this.buf = chunk;
    } else {
      this.buf = Buffer.concat([this.buf.subarray(this.pos), chunk]);
    }
    this.pos = 0;
    this.parse();
  }

  private parse(): void {
    const buf = this.buf;
    while (this.pos < buf.length) {
      if (this.skip > 0) {
        const n = Math.min(buf.length - this.pos, this.skip);
        this.skip -= n;
        this.pos += n;
        continue;
      }
      const start = this.pos;
      const lineEnd = crAt(buf, start);
      if (lineEnd < 0 || lineEnd + 1 >= buf.length) return;
      if (this.stack.length === 0 && this.cost === 0) this.limit = this.limitOf();
      const type = buf[start];
      const lineCost = lineEnd + 2 - start + ELEMENT_OVERHEAD_BYTES;
      let reply: Reply;
      if (type === 0x2b /* + */) {
        if (this.lineValue(RAW_SIMPLE, buf, start + 1, lineEnd, lineCost)) continue;
        reply = { kind: "simple", value: buf.subarray(start + 1, lineEnd) };
      } else if (type === 0x2d /* - */) {
        reply = { kind: "error", value: buf.toString("utf8", start + 1, lineEnd) };
      } else if (type === 0x3a /* : */) {
        if (this.lineValue(RAW_INT, buf, start + 1, lineEnd, lineCost)) continue;
        reply = { kind: "int", value: buf.toString("latin1", start + 1, lineEnd) };
      } else if (type === 0x24 /* $ */) {
        const len = parseLength(buf, start + 1, lineEnd);
        if (len < 0) {
          if (this.lineValue(RAW_NIL, buf, lineEnd, lineEnd, lineCost)) continue;
          reply = { kind: "nil", array: false };
        } else {
          const end = lineEnd + 2 + len;
          if (!this.dropping && this.cost + lineCost + len + 2 > this.limit) this.drop();
          if (this.dropping) {
            this.cost += lineCost + len + 2;
            this.pos = lineEnd + 2;
            this.skip = len + 2;
            this.emit(DROPPED);
            continue;
          }
          if (end + 2 > buf.length) {
            this.waitFor(start, end + 2 - start);
            return;
          }
          this.cost += lineCost + len + 2;
          this.pos = end + 2;
          if (this.onValue !== undefined && this.stack.length === 0)
            this.value(RAW_BULK, buf, lineEnd + 2, end);
          else this.emit({ kind: "bulk", value: buf.subarray(lineEnd + 2, end) });
          continue;
        }
      } else if (type === 0x2a /* * */) {
        const len = parseLength(buf, start + 1, lineEnd);
        this.pos = lineEnd + 2;
        this.addCost(lineCost);
        if (len > 0) {
          this.stack.push({ items: [], remaining: len });
          continue;
        }
        this.emit(len < 0 ? { kind: "nil", array: true } : { kind: "array", value: [] });
        continue;
      } else {
        throw new Error(`protocol error: unexpected byte ${String(type)} in reply`);
      }
      this.pos = lineEnd + 2;
      this.addCost(lineCost);
      this.emit(reply);
    }
  }

  /**
   * A one-line reply (simple string, integer, nil) at the top level, handed to `onValue` when
   * there is one and the reply is within its budget: then true, the line consumed. Else false,
   * nothing done (the caller makes the Reply, and addCost drops it when over the budget).
   */
  private lineValue(
    kind: ValueKind,
    buf: Buffer,
    start: number,
    end: number,
    lineCost: number,
  ): boolean {
    if (this.onValue === undefined || this.stack.length > 0) return false;
    if (this.cost + lineCost > this.limit) return false;
    this.cost += lineCost;
    this.pos = end + 2;
    this.value(kind, buf, start, end);
    return true;
  }

  /** Hands a complete top-level value to `onValue` with its cost (see the constructor). */
  private value(kind: ValueKind, buf: Buffer, start: number, end: number): void {
    const cost = this.cost;
    this.cost = 0;
    (this.onValue as OnValue)(kind, buf, start, end, cost);
  }

  private addCost(n: number): void {
    this.cost += n;
    if (!this.dropping && this.cost > this.limit) this.drop();
  }

  /** From now on the current top-level reply is not kept. */
  private drop(): void {
    this.dropping = true;
    for (const frame of this.stack) frame.items = [];
  }

  /** Keeps the bytes from `start` and waits until `total` bytes from there are buffered. */
  private waitFor(start: number, total: number): void {
    this.buf = this.buf.subarray(start);
    this.pos = 0;
    this.needed = total;
    this.pendingBytes = this.buf.length;
  }

  private emit(reply: Reply): void {
    let value = reply;
    for (;;) {
      const top = this.stack[this.stack.length - 1];
      if (!top) return this.complete(value);
      if (!this.dropping) top.items.push(value);
      if (--top.remaining > 0) return;
      this.stack.pop();
      value = { kind: "array", value: top.items };
    }
  }

  private complete(reply: Reply): void {
    const cost = this.cost;
    const dropped = this.dropping;
    this.cost = 0;
    this.dropping = false;
    if (!dropped) return this.onReply(reply, cost);
    // A dropped reply costs only its stand-in, so the replies after it still get the budget.
    this.onReply(
      { kind: "error", value: `${REPLY_TOO_LARGE}: over ${this.limit} bytes` },
      ELEMENT_OVERHEAD_BYTES,
    );
  }
}

const DROPPED: Reply = { kind: "nil", array: false };

/**
 * Where the next CR is from `from`, -1 for none. Header lines are short: up to 32 bytes are
 * looked at in JS, which costs less than the native call of indexOf (once per reply element).
 */
function crAt(buf: Buffer, from: number): number {
  const end = Math.min(buf.length, from + 32);
  for (let i = from; i < end; i++) if (buf[i] === CR) return i;
  return end === buf.length ? -1 : buf.indexOf(CR, end);
}

/** The length in a `$` or `*` header line: decimal digits, or -1 for nil. */
function parseLength(buf: Buffer, from: number, to: number): number {
  if (buf[from] === 0x2d /* - */) return -1;
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = (buf[i] as number) - 0x30;
    if (d < 0 || d > 9 || i - from > 15) throw new Error("protocol error: bad length in reply");
    n = n * 10 + d;
  }
  if (to === from) throw new Error("protocol error: empty length in reply");
  return n;
}
