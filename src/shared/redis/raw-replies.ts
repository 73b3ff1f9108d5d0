import {
  RAW_BULK,
  RAW_INT,
  RAW_NIL,
  RAW_OBJECT,
  RAW_SIMPLE,
  elementBytes,
  serializeReply,
  type RawKind,
  type ValueKind,
  type Reply,
} from "./resp.js";

const NIL: Reply = { kind: "nil", array: false };

/**
 * One call's replies kept where the parser found them instead of as a Reply object each: for a
 * top-level bulk string, simple string or integer the socket chunk that holds it and the
 * positions of its value (`$1\r\nv\r\n` keeps `v`, `:12\r\n` keeps `12`), for a nil nothing; any
 * other reply (an error, an array) as its Reply object.
 *
 * Why: a pipeline of 100 GETs made, per reply, an object and a Buffer view (a native call each)
 * only to have them copied into the response and dropped (benchmarks-log.md, "KV pipeline,
 * 2026-11-27"); here a reply costs a few array stores. The chunks are never written to (the
 * parser's views share them the same way).
 *
 * `toReplies()` gives exactly the Reply objects RespParser would have made, so any caller can
 * take the general path; the renderers (`rawResp2`, kv/reply/reply-bytes.ts `renderRaw`) write exactly
 * what rendering those objects writes.
 */
export class RawReplies {
  /**
   * Four numbers per entry, in one array (one growing array of small integers costs less than
   * four): its kind, the index of its chunk in `chunks` (-1 for none), and its value's start and
   * end in that chunk.
   */
  readonly entries: number[] = [];
  /** The socket chunks the values are in, each once (consecutive replies share a chunk). */
  readonly chunks: Buffer[] = [];
  /** The RAW_OBJECT entries' replies, at their index (holes elsewhere). */
  readonly objects: (Reply | undefined)[] = [];
  /** Whether an entry is an error, or an array with an error among its items. */
  hasErrors = false;
  /**
   * Bytes of the strings in the replies plus one per element, as `renderableAtOnce` (reply.ts)
   * counts them, so whether the list renders in one piece is known without building it.
   */
  elementBytes = 0;
  private built: Reply[] | undefined;
  private lastChunk: Buffer | undefined;

  get length(): number {
    return this.entries.length >> 2;
  }

  /** A bulk (RAW_BULK), simple (RAW_SIMPLE) or integer (RAW_INT) value: `chunk[start, end)`. */
  addValue(
    kind: typeof RAW_BULK | typeof RAW_SIMPLE | typeof RAW_INT,
    chunk: Buffer,
    start: number,
    end: number,
  ): void {
    if (chunk !== this.lastChunk) {
      this.chunks.push(chunk);
      this.lastChunk = chunk;
    }
    this.entries.push(kind, this.chunks.length - 1, start, end);
    this.elementBytes += kind === RAW_INT ? 1 : 1 + end - start;
  }

  addNil(): void {
    this.entries.push(RAW_NIL, -1, 0, 0);
    this.elementBytes += 1;
  }

  addObject(reply: Reply): void {
    this.objects[this.length] = reply;
    this.entries.push(RAW_OBJECT, -1, 0, 0);
    this.elementBytes += elementBytes(reply);
    if (reply.kind === "error") this.hasErrors = true;
    else if (reply.kind === "array" && reply.value.some((r) => r.kind === "error"))
      this.hasErrors = true;
  }

  /** The kind of entry `i`. */
  kind(i: number): RawKind {
    return this.entries[4 * i] as RawKind;
  }

  /** The chunk holding entry `i`'s value (RAW_BULK, RAW_SIMPLE, RAW_INT entries). */
  chunk(i: number): Buffer {
    return this.chunks[this.entries[4 * i + 1] as number] as Buffer;
  }

  /** The Reply objects RespParser would have made (built once). */
  toReplies(): Reply[] {
    if (this.built) return this.built;
    const out = new Array<Reply>(this.length);
    for (let i = 0; i < out.length; i++) out[i] = this.reply(i);
    this.built = out;
    return out;
  }

  /** Entry `i` as its Reply object. */
  reply(i: number): Reply {
    const kind = this.kind(i);
    if (kind === RAW_OBJECT) return this.objects[i] as Reply;
    if (kind === RAW_NIL) return NIL;
    const e = this.entries;
    return valueReply(kind, this.chunk(i), e[4 * i + 2] as number, e[4 * i + 3] as number);
  }
}

/** The Reply object of a value RespParser hands to `onValue` (see there). */
export function valueReply(
  kind: ValueKind,
  chunk: Buffer | undefined,
  start: number,
  end: number,
): Reply {
  if (kind === RAW_NIL || chunk === undefined) return NIL;
  if (kind === RAW_INT) return { kind: "int", value: chunk.toString("latin1", start, end) };
  return { kind: kind === RAW_BULK ? "bulk" : "simple", value: chunk.subarray(start, end) };
}

/**
 * The RESP2 bytes of the replies, each as `serializeReply` writes its Reply object: what
 * `Upstash-Response-Format: resp2` returns for a pipeline. Values are copied by a JS loop up to
 * SHORT bytes (a native copy's fixed cost is more), by Buffer#copy beyond. With `head`, after
 * `head(n)` for their n bytes, as kv/reply/reply-bytes.ts `renderRaw` does.
 */
export function rawResp2(raw: RawReplies, head?: (bodyLength: number) => string): Buffer {
  const objects: (Buffer | undefined)[] = [];
  const e = raw.entries;
  let size = 0;
  for (let i = 0; i < raw.length; i++) {
    const kind = e[4 * i] as RawKind;
    const n = (e[4 * i + 3] as number) - (e[4 * i + 2] as number);
    if (kind === RAW_OBJECT) {
      const bytes = serializeReply(raw.objects[i] as Reply);
      objects[i] = bytes;
      size += bytes.length;
    } else if (kind === RAW_BULK) size += 5 + digitCount(n) + n;
    else size += kind === RAW_NIL ? 5 : 3 + n;
  }
  const out = bufferAfter(head?.(size) ?? "", size);
  let at = out.length - size;
  for (let i = 0; i < raw.length; i++) {
    const kind = e[4 * i] as RawKind;
    if (kind === RAW_OBJECT) {
      at += (objects[i] as Buffer).copy(out, at);
      continue;
    }
    if (kind === RAW_NIL) {
      out[at++] = 0x24; // $
      out[at++] = 0x2d; // -
      out[at++] = 0x31; // 1
    } else {
      const chunk = raw.chunk(i);
      const start = e[4 * i + 2] as number;
      const end = e[4 * i + 3] as number;
      if (kind === RAW_BULK) {
        out[at++] = 0x24; // $
        at = writeDigits(out, at, end - start);
      } else out[at++] = kind === RAW_INT ? 0x3a : 0x2b; // : or +
      if (end - start > SHORT) at += chunk.copy(out, at, start, end);
      else for (let j = start; j < end; j++) out[at++] = chunk[j] as number;
    }
    out[at++] = 0x0d;
    out[at++] = 0x0a;
  }
  return out;
}

/** Values up to this many bytes are copied by a JS loop (see rawResp2). */
const SHORT = 64;

function digitCount(n: number): number {
  let digits = 1;
  for (; n >= 10; n = Math.floor(n / 10)) digits++;
  return digits;
}

/** Writes `n` in decimal followed by CRLF at `at`; returns the position after them. */
function writeDigits(out: Buffer, at: number, n: number): number {
  const end = at + digitCount(n);
  for (let i = end - 1; i >= at; i--, n = Math.floor(n / 10)) out[i] = 0x30 + (n % 10);
  out[end] = 0x0d;
  out[end + 1] = 0x0a;
  return end + 2;
}

/**
 * A buffer of `head` (ASCII, written) followed by room for `size` bytes, which the caller writes:
 * a response rendered behind its HTTP head in the one buffer that is sent (`rawResp2`, and
 * kv/reply/reply-bytes.ts `renderRaw`).
 */
export function bufferAfter(head: string, size: number): Buffer {
  const out = Buffer.allocUnsafe(head.length + size);
  if (head.length > 0) out.write(head, 0, "latin1");
  return out;
}
