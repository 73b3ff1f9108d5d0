import { RAW_INT, RAW_NIL, RAW_OBJECT, type Reply } from "../../shared/redis/resp.js";
import { bufferAfter, type RawReplies } from "../../shared/redis/raw-replies.js";
import { renderItem } from "./reply.js";

/**
 * A list of replies rendered as JSON straight into one Buffer: byte for byte
 * `[${replies.map((r) => renderItem(r, base64)).join(",")}]` (reply.ts has the rules).
 *
 * Why: a pipeline of 100 GETs rendered through strings made, per reply, a string of the value
 * (a native call), its JSON.stringify, the item's template string, and then the join; in the
 * profile that and its garbage were a tenth of the request. Here the usual replies — a short
 * string that needs no escaping, an integer, nil — are copied byte by byte in JS into a buffer
 * measured first. Any other reply (an error, an array, a longer or escaped string) is rendered by
 * renderItem as before and its text copied in.
 */
export function renderList(replies: readonly Reply[], base64: boolean): Buffer {
  let other: (string | undefined)[] | undefined;
  let size = 1 + replies.length; // [ , … ]
  for (let i = 0; i < replies.length; i++) {
    const reply = replies[i] as Reply;
    const n = directSize(reply, base64);
    if (n >= 0) {
      size += n;
      continue;
    }
    const text = renderItem(reply, base64);
    (other ??= [])[i] = text;
    size += Buffer.byteLength(text);
  }
  const out = Buffer.allocUnsafe(Math.max(size, 2));
  let at = 0;
  out[at++] = 0x5b; // [
  for (let i = 0; i < replies.length; i++) {
    if (i > 0) out[at++] = 0x2c; // ,
    const text = other?.[i];
    at =
      text === undefined
        ? writeDirect(out, at, replies[i] as Reply, base64)
        : writeText(out, at, text);
  }
  out[at++] = 0x5d; // ]
  return out.subarray(0, at);
}

/** Values up to this many bytes may be copied directly (longer ones: native conversions pay). */
const SHORT = 64;
const RESULT = Buffer.from('{"result":');
const NULL = Buffer.from("null");
/** `{"result":` + `}`: what every directly written item has besides its value. */
const ITEM = RESULT.length + 1;

/** The rendered size of `reply` if writeDirect can write it, else -1. */
function directSize(reply: Reply, base64: boolean): number {
  switch (reply.kind) {
    case "simple":
    case "bulk":
      return stringSize(reply.value, 0, reply.value.length, base64);
    case "int":
      return ITEM + reply.value.length;
    case "nil":
      return ITEM + NULL.length;
    default:
      return -1;
  }
}

/** Writes `{"result":…}` for a reply directSize accepted; returns the position after it. */
function writeDirect(out: Buffer, at: number, reply: Reply, base64: boolean): number {
  if (reply.kind === "int") {
    at = writeLatin1(out, writeStart(out, at), reply.value);
    out[at] = 0x7d; // }
    return at + 1;
  }
  if (reply.kind === "nil") return writeNil(out, at);
  if (reply.kind === "simple" || reply.kind === "bulk")
    return writeString(out, at, reply.value, 0, reply.value.length, base64);
  return at;
}

/**
 * The rendered size of the item of the top-level string `value[start, end)` if writeString can
 * write it (short, and base64 or needing no escaping), else -1.
 */
function stringSize(value: Buffer, start: number, end: number, base64: boolean): number {
  const n = end - start;
  if (n > SHORT) return -1;
  if (encodesBase64(value, start, end, base64)) return ITEM + 2 + 4 * Math.ceil(n / 3);
  return plainBytes(value, start, end) ? ITEM + 2 + n : -1;
}

/** `{"result":"…"}` for a string stringSize accepted; returns the position after it. */
function writeString(
  out: Buffer,
  at: number,
  value: Buffer,
  start: number,
  end: number,
  base64: boolean,
): number {
  at = writeStart(out, at);
  out[at++] = 0x22; // "
  if (encodesBase64(value, start, end, base64)) at = writeBase64(out, at, value, start, end);
  else for (let i = start; i < end; i++) out[at++] = value[i] as number;
  out[at++] = 0x22;
  out[at] = 0x7d; // }
  return at + 1;
}

/** `{"result":null}`; returns the position after it. */
function writeNil(out: Buffer, at: number): number {
  at = writeStart(out, at);
  out[at] = 0x6e; // n
  out[at + 1] = 0x75; // u
  out[at + 2] = 0x6c; // l
  out[at + 3] = 0x6c; // l
  out[at + 4] = 0x7d; // }
  return at + 5;
}

/**
 * `{"result":` (RESULT); returns the position after it (the item's `}` is the caller's). Ten
 * constant stores: copying RESULT by a loop made renderRaw of 100 one-byte strings take 3.8 µs
 * instead of 2.4 (docs/decisions.md, "KV fast lane").
 */
function writeStart(out: Buffer, at: number): number {
  out[at] = 0x7b; // {
  out[at + 1] = 0x22; // "
  out[at + 2] = 0x72; // r
  out[at + 3] = 0x65; // e
  out[at + 4] = 0x73; // s
  out[at + 5] = 0x75; // u
  out[at + 6] = 0x6c; // l
  out[at + 7] = 0x74; // t
  out[at + 8] = 0x22; // "
  out[at + 9] = 0x3a; // :
  return at + 10; // RESULT.length
}

/**
 * RawReplies (from a pipeline's exchange) rendered as JSON straight into one Buffer: byte for
 * byte `renderList(raw.toReplies(), base64)`, without the Reply objects, in one pass. The items
 * are written into a scratch buffer kept between calls (nothing awaits while it is in use), then
 * copied out at their size: measuring every item first, as renderList does, cost as much as
 * writing it. A short string that needs no escaping is copied from the socket chunk it came in,
 * checked byte by byte as it is copied (one that turns out to need escaping is written again
 * by renderItem), an integer's digits likewise; anything else is rendered by renderItem from
 * its Reply object and its text copied in.
 *
 * With `head`, the buffer starts with `head(n)` (ASCII: an HTTP head announcing the body's n
 * bytes) and the body follows it, so an answer goes out as it was copied out of the scratch
 * (LaneResponse.endHeaded), not copied again behind its head.
 */
export function renderRaw(
  raw: RawReplies,
  base64: boolean,
  head?: (bodyLength: number) => string,
): Buffer {
  const e = raw.entries;
  let out = rawScratch;
  let at = 0;
  out[at++] = 0x5b; // [
  for (let i = 0; i < raw.length; i++) {
    // The largest direct item: a SHORT string as base64, its `{"result":""}`, and a comma.
    if (at + 2 * SHORT + ITEM + 8 > out.length) out = grown(out, at, 2 * SHORT + ITEM + 8);
    if (i > 0) out[at++] = 0x2c; // ,
    const kind = e[4 * i];
    const next = kind === RAW_OBJECT ? -1 : writeRawItem(out, at, raw, i, base64);
    if (next >= 0) {
      at = next;
      continue;
    }
    const text = renderItem(raw.reply(i), base64);
    const most = 3 * text.length;
    if (at + most + 1 > out.length) out = grown(out, at, most + 1);
    at += out.write(text, at, "utf8");
  }
  out[at++] = 0x5d; // ]
  const body = bufferAfter(head?.(at) ?? "", at);
  out.copy(body, body.length - at, 0, at);
  rawScratch = out.length > SCRATCH_KEEP ? Buffer.allocUnsafeSlow(SCRATCH_START) : out;
  return body;
}

/** renderRaw's scratch: SCRATCH_START bytes, grown for a larger list, kept up to SCRATCH_KEEP. */
const SCRATCH_START = 16 * 1024;
const SCRATCH_KEEP = 256 * 1024;
let rawScratch: Buffer = Buffer.allocUnsafeSlow(SCRATCH_START);

/** A copy of `out`'s first `used` bytes in a buffer with room for `more` after them. */
function grown(out: Buffer, used: number, more: number): Buffer {
  const bigger: Buffer = Buffer.allocUnsafeSlow(Math.max(2 * out.length, used + more));
  out.copy(bigger, 0, 0, used);
  return bigger;
}

/**
 * Writes `{"result":…}` for entry `i` at `at` when it is a nil, an integer, or a short string
 * sent as base64 or needing no escaping; returns the position after it, or -1 (the bytes from
 * `at` are then left for the caller to overwrite).
 */
function writeRawItem(
  out: Buffer,
  at: number,
  raw: RawReplies,
  i: number,
  base64: boolean,
): number {
  const e = raw.entries;
  const kind = e[4 * i];
  if (kind === RAW_NIL) return writeNil(out, at);
  const chunk = raw.chunk(i);
  const start = e[4 * i + 2] as number;
  const end = e[4 * i + 3] as number;
  at = writeStart(out, at);
  if (kind === RAW_INT) {
    for (let j = start; j < end; j++) out[at++] = chunk[j] as number;
  } else {
    if (end - start > SHORT) return -1;
    out[at++] = 0x22; // "
    if (encodesBase64(chunk, start, end, base64)) at = writeBase64(out, at, chunk, start, end);
    else {
      for (let j = start; j < end; j++) {
        const c = chunk[j] as number;
        if (c < 0x20 || c > 0x7f || c === 0x22 || c === 0x5c) return -1; // see plainBytes
        out[at++] = c;
      }
    }
    out[at++] = 0x22;
  }
  out[at] = 0x7d; // }
  return at + 1;
}

/** Whether a top-level string is sent as base64: all are, except exactly `OK` (reply.ts). */
function encodesBase64(value: Buffer, start: number, end: number, base64: boolean): boolean {
  return base64 && !(end - start === 2 && value[start] === 0x4f && value[start + 1] === 0x4b);
}

/**
 * Bytes that stand for themselves inside a JSON string: printable ASCII but `"` and `\`. (DEL,
 * 0x7f, is printable for JSON.stringify too; control characters and all non-ASCII bytes are left
 * to renderItem, which escapes them and decodes UTF-8.)
 */
function plainBytes(value: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = value[i] as number;
    if (c < 0x20 || c > 0x7f || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}

function writeLatin1(out: Buffer, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) out[at++] = text.charCodeAt(i);
  return at;
}

function writeText(out: Buffer, at: number, text: string): number {
  return at + out.write(text, at, "utf8");
}

const ALPHABET = Buffer.from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");

/** Standard base64 with `=` padding, as Buffer#toString("base64") writes it. */
function writeBase64(out: Buffer, at: number, value: Buffer, start: number, end: number): number {
  let i = start;
  for (; i + 2 < end; i += 3) {
    const n =
      ((value[i] as number) << 16) | ((value[i + 1] as number) << 8) | (value[i + 2] as number);
    out[at++] = ALPHABET[n >> 18] as number;
    out[at++] = ALPHABET[(n >> 12) & 63] as number;
    out[at++] = ALPHABET[(n >> 6) & 63] as number;
    out[at++] = ALPHABET[n & 63] as number;
  }
  const rest = end - i;
  if (rest > 0) {
    const n = ((value[i] as number) << 16) | (rest === 2 ? (value[i + 1] as number) << 8 : 0);
    out[at++] = ALPHABET[n >> 18] as number;
    out[at++] = ALPHABET[(n >> 12) & 63] as number;
    out[at++] = rest === 2 ? (ALPHABET[(n >> 6) & 63] as number) : 0x3d;
    out[at++] = 0x3d; // =
  }
  return at;
}
