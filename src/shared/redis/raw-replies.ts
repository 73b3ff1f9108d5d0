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
  readonly kinds: RawKind[] = [];
  readonly chunks: (Buffer | undefined)[] = [];
  readonly starts: number[] = [];
  readonly ends: number[] = [];
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

  get length(): number {
    return this.kinds.length;
  }

  /** A bulk (RAW_BULK), simple (RAW_SIMPLE) or integer (RAW_INT) value: `chunk[start, end)`. */
  addValue(
    kind: typeof RAW_BULK | typeof RAW_SIMPLE | typeof RAW_INT,
    chunk: Buffer,
    start: number,
    end: number,
  ): void {
    this.kinds.push(kind);
    this.chunks.push(chunk);
    this.starts.push(start);
    this.ends.push(end);
    this.elementBytes += kind === RAW_INT ? 1 : 1 + end - start;
  }

  addNil(): void {
    this.kinds.push(RAW_NIL);
    this.chunks.push(undefined);
    this.starts.push(0);
    this.ends.push(0);
    this.elementBytes += 1;
  }

  addObject(reply: Reply): void {
    this.objects[this.kinds.length] = reply;
    this.kinds.push(RAW_OBJECT);
    this.chunks.push(undefined);
    this.starts.push(0);
    this.ends.push(0);
    this.elementBytes += elementBytes(reply);
    if (reply.kind === "error") this.hasErrors = true;
    else if (reply.kind === "array" && reply.value.some((r) => r.kind === "error"))
      this.hasErrors = true;
  }

  /** The Reply objects RespParser would have made (built once). */
  toReplies(): Reply[] {
    if (this.built) return this.built;
    const out = new Array<Reply>(this.kinds.length);
    for (let i = 0; i < out.length; i++) out[i] = this.reply(i);
    this.built = out;
    return out;
  }

  private reply(i: number): Reply {
    const kind = this.kinds[i] as RawKind;
    if (kind === RAW_OBJECT) return this.objects[i] as Reply;
    return valueReply(kind, this.chunks[i], this.starts[i] as number, this.ends[i] as number);
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
 * `Upstash-Response-Format: resp2` returns for a pipeline.
 */
export function rawResp2(raw: RawReplies): Buffer {
  const objects: (Buffer | undefined)[] = [];
  let size = 0;
  for (let i = 0; i < raw.length; i++) {
    const kind = raw.kinds[i];
    const n = (raw.ends[i] as number) - (raw.starts[i] as number);
    if (kind === RAW_OBJECT) {
      const bytes = serializeReply(raw.objects[i] as Reply);
      objects[i] = bytes;
      size += bytes.length;
    } else if (kind === RAW_BULK) size += 5 + String(n).length + n;
    else size += kind === RAW_NIL ? 5 : 3 + n;
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (let i = 0; i < raw.length; i++) {
    const kind = raw.kinds[i];
    if (kind === RAW_OBJECT) {
      at += (objects[i] as Buffer).copy(out, at);
      continue;
    }
    if (kind === RAW_NIL) {
      at += out.write("$-1\r\n", at, "latin1");
      continue;
    }
    const chunk = raw.chunks[i] as Buffer;
    const start = raw.starts[i] as number;
    const end = raw.ends[i] as number;
    if (kind === RAW_BULK) at += out.write(`$${end - start}\r\n`, at, "latin1");
    else out[at++] = kind === RAW_INT ? 0x3a : 0x2b; // : or +
    at += chunk.copy(out, at, start, end);
    out[at++] = 0x0d;
    out[at++] = 0x0a;
  }
  return out;
}
