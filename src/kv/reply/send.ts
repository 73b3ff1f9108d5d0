import { streamBody, type ReplySink } from "../../shared/http/respond.js";
import { replyPieces, serializeReply, type Reply } from "../../shared/redis/resp.js";
import { rawResp2 } from "../../shared/redis/raw-replies.js";
import type { Principal } from "../databases/database.js";
import { replyList, runPipelineSlices, type SliceReplies } from "../commands/execute.js";
import type { CommandList } from "../parse/body-args.js";
import type { Interrupts } from "../commands/blocking.js";
import {
  errorStatus,
  itemPieces,
  rawRenderableAtOnce,
  renderableAtOnce,
  renderItem,
} from "./reply.js";
import { renderList, renderRaw } from "./reply-bytes.js";
import { heldBytes, type ReplyBuffers } from "./reply-buffers.js";

/**
 * Sending the KV gateway's replies (http/http.ts routes the request, then calls these): each
 * reply rendered in the request's format (JSON, JSON with base64 strings, or RESP2) and written
 * with backpressure, its bytes held against the process's budget (reply-buffers.ts).
 */

/** The reply format a request asked for (Upstash-Encoding, Upstash-Response-Format). */
export interface Format {
  readonly base64: boolean;
  readonly resp2: boolean;
}

/**
 * Replies are written with backpressure (streamBody): a slow reader costs the reply, no more.
 * A small reply (renderableAtOnce) is rendered whole and sent with its headers in one write.
 */
export async function sendSingle(
  out: ReplyOut,
  reply: Reply,
  format: Format,
  headers: Record<string, string>,
  method: string,
): Promise<void> {
  const status = reply.kind === "error" ? errorStatus(reply.value) : 200;
  if (method !== "HEAD" && renderableAtOnce(reply)) {
    const body = format.resp2 ? serializeReply(reply) : renderItem(reply, format.base64);
    return sendWhole(out.res, status, headers, format, body);
  }
  const pieces = format.resp2 ? replyPieces(reply) : itemPieces(reply, format.base64);
  return streamHeld(out, status, withType(headers, format), pieces, method, heldBytes(reply));
}

/**
 * A pipeline's or transaction's replies. RawReplies that render in one piece are written from
 * where they are (renderRaw, rawResp2: the same bytes as from their Reply objects); anything else
 * goes the general way.
 */
export async function sendList(
  out: ReplyOut,
  list: SliceReplies,
  format: Format,
  headers: Record<string, string>,
  method: string,
): Promise<void> {
  if (!Array.isArray(list) && method !== "HEAD" && rawRenderableAtOnce(list)) {
    const body = format.resp2 ? rawResp2(list) : renderRaw(list, format.base64);
    return sendWhole(out.res, 200, headers, format, body);
  }
  const replies = replyList(list);
  if (method !== "HEAD" && renderableAtOnce({ kind: "array", value: replies })) {
    const body = format.resp2
      ? Buffer.concat(replies.map(serializeReply))
      : renderList(replies, format.base64);
    return sendWhole(out.res, 200, headers, format, body);
  }
  const pieces = format.resp2 ? listBytes(replies) : listJson(replies, format.base64);
  const bytes = replies.reduce((sum, r) => sum + heldBytes(r), 0);
  return streamHeld(out, 200, withType(headers, format), pieces, method, bytes);
}

/** Status, headers and a whole body in one go (a string body goes out in the headers' write). */
function sendWhole(
  res: ReplySink,
  status: number,
  headers: Record<string, string>,
  format: Format,
  body: string | Buffer,
): void {
  const list: string[] = [];
  for (const name in headers) list.push(name, headers[name] as string);
  list.push("content-type", typeOf(format));
  list.push(
    "content-length",
    String(typeof body === "string" ? Buffer.byteLength(body) : body.length),
  );
  res.writeHead(status, list).end(body);
}

/**
 * A pipeline of more than one slice: each slice's replies are rendered as soon as they are final
 * (a reply too large to render in one piece is kept and rendered piecewise while written), so
 * what waits for the last slice is a few flat strings, not an object per reply. The body is
 * byte for byte what sendList writes.
 */
export async function sendSlicedPipeline(
  out: ReplyOut,
  p: Principal,
  commands: CommandList,
  to: { format: Format; headers: Record<string, string>; method: string },
  interrupts: Interrupts,
): Promise<void> {
  const { format, headers, method } = to;
  const rendered: (string | Buffer | Reply)[] = [];
  await runPipelineSlices(
    p,
    commands,
    (replies) => renderSlice(replies, format, rendered.length === 0, rendered),
    interrupts,
  );
  const pieces = format.resp2 ? slicedBytes(rendered) : slicedJson(rendered, format.base64);
  const bytes = rendered.reduce(
    (sum: number, part) =>
      sum + (typeof part === "string" || Buffer.isBuffer(part) ? part.length : heldBytes(part)),
    0,
  );
  await streamHeld(out, 200, withType(headers, format), pieces, method, bytes);
}

/** Appends one slice's replies to `out`: runs of small replies joined, large ones as they are. */
function renderSlice(
  replies: Reply[],
  format: Format,
  first: boolean,
  out: (string | Buffer | Reply)[],
): void {
  const run: (string | Buffer)[] = [];
  const endRun = (): void => {
    if (run.length === 0) return;
    out.push(format.resp2 ? Buffer.concat(run as Buffer[]) : run.join(""));
    run.length = 0;
  };
  for (let i = 0; i < replies.length; i++) {
    const reply = replies[i] as Reply;
    if (!format.resp2 && (i > 0 || !first)) run.push(",");
    if (renderableAtOnce(reply)) {
      run.push(format.resp2 ? serializeReply(reply) : renderItem(reply, format.base64));
    } else {
      endRun();
      out.push(reply);
    }
  }
  endRun();
}

function* slicedBytes(parts: (string | Buffer | Reply)[]): Generator<Buffer> {
  for (const part of parts) {
    if (Buffer.isBuffer(part)) yield part;
    else if (typeof part !== "string") yield* replyPieces(part);
  }
}

function* slicedJson(parts: (string | Buffer | Reply)[], base64: boolean): Generator<string> {
  yield "[";
  for (const part of parts) {
    if (typeof part === "string") yield part;
    else if (!Buffer.isBuffer(part)) yield* itemPieces(part, base64);
  }
  yield "]";
}

/** Where a reply goes, and the limits on replies held for clients still reading them. */
export interface ReplyOut {
  res: ReplySink;
  buffers: ReplyBuffers;
  /** A client that takes none of a reply for this long is cut off (STASHD_REQUEST_TIMEOUT_MS). */
  stallMs: number;
}

/** streamBody with the reply's `bytes` counted against the process's budget (reply-buffers.ts). */
function streamHeld(
  out: ReplyOut,
  status: number,
  headers: Record<string, string>,
  pieces: Iterable<string | Buffer>,
  method: string,
  bytes: number,
): Promise<void> {
  if (method === "HEAD") return streamBody(out.res, status, headers, pieces, true);
  return out.buffers.holding(bytes, () =>
    streamBody(out.res, status, headers, pieces, false, out.stallMs),
  );
}

function* listBytes(replies: Reply[]): Generator<Buffer> {
  for (const reply of replies) yield* replyPieces(reply);
}

function* listJson(replies: Reply[], base64: boolean): Generator<string> {
  yield "[";
  for (let i = 0; i < replies.length; i++) {
    if (i > 0) yield ",";
    yield* itemPieces(replies[i] as Reply, base64);
  }
  yield "]";
}

function withType(headers: Record<string, string>, format: Format): Record<string, string> {
  return { ...headers, "content-type": typeOf(format) };
}

export function typeOf(format: Format): string {
  return format.resp2 ? "application/octet-stream" : "application/json";
}
