import { StringDecoder } from "node:string_decoder";
import type { Reply } from "../../shared/redis/resp.js";
import { ERROR_CATALOG } from "../../shared/errors.js";
import type { RawReplies } from "../../shared/redis/raw-replies.js";
import { explainRefusal, isStorageRefusal } from "../../shared/redis/refusal.js";

/**
 * RESP2 reply → the JSON the SDKs expect: integers as numbers (exact digits, never through a JS
 * number), strings as strings (invalid UTF-8 → U+FFFD), nil as null, arrays as arrays.
 *
 * With `Upstash-Encoding: base64`, every string at every depth is base64 except a top-level
 * result that is exactly `OK` (docs/redis-rest-protocol.md §2.2: both SDKs decode it correctly; a
 * raw "OK" inside an array would turn into garbage in @upstash/redis). Errors are never encoded.
 */
export function renderValue(reply: Reply, base64: boolean, top: boolean): string {
  switch (reply.kind) {
    case "simple":
    case "bulk":
      if (base64 && !(top && isOk(reply.value))) return `"${reply.value.toString("base64")}"`;
      return JSON.stringify(reply.value.toString("utf8"));
    case "int":
      return reply.value;
    case "nil":
      return "null";
    case "error":
      return renderValue(
        { kind: "bulk", value: Buffer.from(upstashError(reply.value)) },
        base64,
        false,
      );
    case "array": {
      let out = "[";
      for (let i = 0; i < reply.value.length; i++) {
        if (i > 0) out += ",";
        out += renderValue(reply.value[i] as Reply, base64, false);
      }
      return `${out}]`;
    }
  }
}

function isOk(value: Buffer): boolean {
  return value.length === 2 && value[0] === 0x4f && value[1] === 0x4b;
}

/** `{"result":…}` or `{"error":…}` for one reply. */
export function renderItem(reply: Reply, base64: boolean): string {
  if (reply.kind === "error") return `{"error":${JSON.stringify(upstashError(reply.value))}}`;
  return `{"result":${renderValue(reply, base64, true)}}`;
}

/** Strings longer than this are rendered in pieces of this many bytes (a multiple of 3). */
const PIECE = 48 * 1024;

/**
 * Whether a reply is small enough to render in one piece: its strings add up to at most PIECE
 * bytes (each element counting one more). Looks at no more of a large reply than that.
 */
export function renderableAtOnce(reply: Reply): boolean {
  return bytesLeft(reply, PIECE) >= 0;
}

/** `renderableAtOnce` of the array of a pipeline's RawReplies (their elementBytes count alike). */
export function rawRenderableAtOnce(raw: RawReplies): boolean {
  return 1 + raw.elementBytes <= PIECE;
}

function bytesLeft(reply: Reply, left: number): number {
  switch (reply.kind) {
    case "simple":
    case "bulk":
    case "error":
      return left - 1 - reply.value.length;
    case "array":
      left--;
      for (let i = 0; i < reply.value.length && left >= 0; i++)
        left = bytesLeft(reply.value[i] as Reply, left);
      return left;
    default:
      return left - 1;
  }
}

/**
 * `renderValue` piece by piece, for replies written with backpressure: a long string comes out in
 * slices (base64 of 3-byte-aligned slices, or UTF-8 decoded across slice boundaries), so no piece
 * is much longer than PIECE and the whole text never exists at once. Joined, the pieces equal
 * `renderValue(reply, base64, top)`.
 */
export function* valuePieces(reply: Reply, base64: boolean, top: boolean): Generator<string> {
  if (reply.kind === "array") {
    yield "[";
    for (let i = 0; i < reply.value.length; i++) {
      if (i > 0) yield ",";
      yield* valuePieces(reply.value[i] as Reply, base64, false);
    }
    yield "]";
  } else if ((reply.kind === "bulk" || reply.kind === "simple") && reply.value.length > PIECE) {
    yield* stringPieces(reply.value, base64 && !(top && isOk(reply.value)));
  } else {
    yield renderValue(reply, base64, top);
  }
}

function* stringPieces(value: Buffer, base64: boolean): Generator<string> {
  yield '"';
  const decoder = base64 ? undefined : new StringDecoder("utf8");
  for (let at = 0; at < value.length; at += PIECE) {
    const slice = value.subarray(at, at + PIECE);
    yield decoder ? escaped(decoder.write(slice)) : slice.toString("base64");
  }
  if (decoder) yield escaped(decoder.end());
  yield '"';
}

/** JSON string escaping without the quotes. */
function escaped(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

/** `renderItem` piece by piece (see valuePieces). */
export function* itemPieces(reply: Reply, base64: boolean): Generator<string> {
  if (reply.kind === "error") {
    yield renderItem(reply, base64);
    return;
  }
  yield '{"result":';
  yield* valuePieces(reply, base64, true);
  yield "}";
}

/**
 * Redis words ACL refusals differently by version (`NOPERM this user has no permissions to run
 * the 'set' command` in 7.0, `NOPERM User <u> has no permissions …` in 7.2+); the Upstash service
 * (and code matching on it) says `… command or its subcommand`. One wording whatever the backend.
 * A database at its memory limit (OOM) answers as Upstash does at its max data size, `ERR DB
 * capacity quota exceeded`, with what to do and Redis's own text; MISCONF keeps Redis's text and
 * says the server cannot store now.
 */
export function upstashError(text: string): string {
  const m = /^NOPERM (?:this user|User \S+) has no permissions to run the '([^']+)' command/.exec(
    text,
  );
  if (m) {
    return `NOPERM this user has no permissions to run the '${m[1] ?? ""}' command or its subcommand`;
  }
  if (text.startsWith("OOM ")) return `${CAPACITY_EXCEEDED} (Redis: ${text})`;
  if (text.startsWith(STRING_TOO_LONG)) return `ERR max single record size exceeded (${text})`;
  return explainRefusal(text);
}

/** Redis's refusal to grow a string past `proto-max-bulk-len` (a managed database's record size). */
const STRING_TOO_LONG = "ERR string exceeds maximum allowed size";

/** Upstash's words for a database past its max data size, then what a reader can do about it. */
const CAPACITY_EXCEEDED =
  "ERR DB capacity quota exceeded: the database is at its memory limit and refuses writes; " +
  "reads and deletes still work. Delete keys or set TTLs, or raise the limit " +
  "(STASHD_KV_MAX_DATA_BYTES or `db create --max-data-size` for a managed database, " +
  "maxmemory for an external Redis)";

/**
 * HTTP status of a single command's error reply: 400 as Upstash answers, but 507 when Redis
 * cannot store writes now (MISCONF, OOM: the server's fault, not the request's).
 */
export function errorStatus(text: string): number {
  return isStorageRefusal(text) ? ERROR_CATALOG.insufficient_storage : 400;
}
