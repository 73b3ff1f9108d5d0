import type { Reply } from "../../shared/redis/resp.js";
import type { MessageMeta, MessageState } from "../domain/message.js";
import { encodeLogCursor, parseLogCursor, type LogPosition } from "../domain/log-cursor.js";
import { collectPage, type Page, type PageLimits } from "./paging.js";
import type { Partition, Partitions } from "./partitions.js";
import { asArray, asText, checked } from "./replies.js";
import { mergeSorted } from "./spread.js";

/** One state change as the transitions wrote it to the log stream. */
export interface LogEvent {
  /** Stream id, also the cursor. */
  id: string;
  state: MessageState;
  time: number;
  meta: MessageMeta;
  /** Attempt details: responseStatus, responseHeader, responseBody (base64), error, ... */
  extra: Record<string, unknown>;
  /** Length of the stored fields (a page's byte budget counts it). */
  bytes: number;
}

/**
 * An entry as listed: its stream id, the partition whose stream holds it, and the event (absent
 * when the message index named an entry the stream no longer holds: trimmed by retention).
 */
interface Listed {
  id: string;
  part: number;
  event: LogEvent | undefined;
}

/** Reads the entries after cursor `after`, at most `size`, in listing order. */
type Reader = (after: string | undefined, size: number) => Promise<Listed[]>;

/**
 * Reads of the log streams (written inside the Lua transitions, trimmed there by retention), one
 * per partition. A listing merges them in stream-id order, ties (the same id in two partitions'
 * streams) broken by partition. Cursors (domain/log-cursor.ts: the stream id and partition of the
 * last entry examined, as digits) are read exclusively, so they stay valid while new events
 * arrive: each partition's range starts at the id, inclusive or not by whether the partition
 * comes after the cursor's at that id. A bare stream id given to several partitions is read
 * exclusively in each; a time cursor starts every partition at that millisecond, inclusive.
 *
 * A listing of given message ids reads their events through the message log index instead
 * (`<p>msglog:<id>`, keys.ts: the stream ids of the message's events, pushed by the transitions),
 * one XRANGE per event, so its cost does not grow with the other messages' events. Its entries,
 * order, pages and cursors are the scan's. An id without an index key in any partition (a message
 * stored before the index existed, or one unknown or expired) makes the listing a scan, as before.
 */
export class LogStore {
  constructor(
    readonly parts: Partitions,
    /** Trimming by MINID is approximate (whole stream nodes), so reads hide older events too. */
    private readonly retentionMs: number,
    /** What one page may weigh and read (STASHD_QUEUE_PAGE_MAX_BYTES, _MAX_SCANNED). */
    private readonly pageLimits: PageLimits = {},
  ) {}

  /**
   * One page of the events `keep` accepts. `messageIds`, when given, must include every message
   * `keep` accepts (a filter by message id): their index is read instead of the whole stream.
   */
  async list(
    latestFirst: boolean,
    count: number,
    cursor: string | undefined,
    keep: (e: LogEvent) => boolean,
    messageIds: readonly string[] = [],
  ): Promise<Page<LogEvent>> {
    const cutoff = Date.now() - this.retentionMs;
    const indexed = messageIds.length > 0 ? await this.indexOf(messageIds) : undefined;
    const positions = indexed?.sort(listingOrder(latestFirst));
    const read: Reader = positions
      ? (after, size) => this.readIndexed(positions, latestFirst, after, size)
      : (after, size) => this.read(latestFirst, after, size);
    return collectPage(
      async (after, size) =>
        (await read(after, size)).map(({ id, part, event }) => ({
          key: this.cursorOf(id, part),
          item: event && event.time >= cutoff && keep(event) ? event : undefined,
          bytes: event?.bytes ?? 0,
        })),
      count,
      cursor,
      this.pageLimits,
    );
  }

  private cursorOf(id: string, part: number): string {
    return encodeLogCursor(id, part);
  }

  /** The first `size` events after cursor `after` over every partition, in listing order. */
  private async read(latestFirst: boolean, after: string | undefined, size: number) {
    const at = after === undefined ? undefined : parseLogCursor(after);
    const lists = await this.parts.each(async (p): Promise<Listed[]> => {
      const reply = await p.redis.exec([...rangeOf(p, latestFirst, at), "COUNT", String(size)]);
      return asArray(checked(reply, "logs")).map((e) => listedOf(parseEvent(e), p.index));
    });
    return mergeSorted(lists, listingOrder(latestFirst), size);
  }

  /**
   * The stream positions of the events of messages `ids`, from their index keys in every
   * partition (a message's events are in its own partition's stream, but looking in each keeps
   * no assumption about placement); undefined when some id has no index key anywhere.
   */
  private async indexOf(ids: readonly string[]): Promise<Listed[] | undefined> {
    const unique = [...new Set(ids)];
    const found = new Set<string>();
    const lists = await this.parts.each(async (p) => {
      const replies = await p.redis.execMany(
        unique.map((id) => ["LRANGE", p.keys.messageLog(id), "0", "-1"]),
      );
      return replies.flatMap((reply, i) => {
        const streamIds = asArray(checked(reply, "logs")).map((r) => asText(r) ?? "");
        if (streamIds.length > 0) found.add(unique[i] ?? "");
        return streamIds.map((id): Listed => ({ id, part: p.index, event: undefined }));
      });
    });
    return found.size === unique.length ? lists.flat() : undefined;
  }

  /** The indexed positions after cursor `after`, at most `size`, with their events read. */
  private async readIndexed(
    positions: Listed[],
    latestFirst: boolean,
    after: string | undefined,
    size: number,
  ): Promise<Listed[]> {
    const at = after === undefined ? undefined : parseLogCursor(after);
    const chunk = positions.filter((l) => isAfter(l, latestFirst, at)).slice(0, size);
    await this.parts.each(async (p) => {
      const mine = chunk.filter((l) => l.part === p.index);
      if (mine.length === 0) return;
      const replies = await p.redis.execMany(mine.map((l) => ["XRANGE", p.keys.log, l.id, l.id]));
      replies.forEach((reply, i) => {
        const [entry] = asArray(checked(reply, "logs"));
        const listed = mine[i];
        if (entry && listed) listed.event = parseEvent(entry);
      });
    });
    return chunk;
  }
}

function listedOf(event: LogEvent, part: number): Listed {
  return { id: event.id, part, event };
}

/** Listing order: stream id, then partition; reversed newest first. */
function listingOrder(latestFirst: boolean): (a: Listed, b: Listed) => number {
  const ascending = (a: Listed, b: Listed) => compareIds(a.id, b.id) || a.part - b.part;
  return latestFirst ? (a, b) => ascending(b, a) : ascending;
}

/** Whether position `l` comes after cursor position `at` in the listing (rangeOf's rule). */
function isAfter(l: Listed, latestFirst: boolean, at: LogPosition | undefined): boolean {
  if (at === undefined) return true;
  const sign = latestFirst ? -1 : 1;
  if (at.kind === "time") return sign * (Number(l.id.split("-")[0]) - Number(at.ms)) >= 0;
  const byId = sign * compareIds(l.id, at.id);
  return byId > 0 || (byId === 0 && at.part >= 0 && sign * (l.part - at.part) > 0);
}

/**
 * The XRANGE / XREVRANGE of partition `p` after position `at`: its own entries at the cursor's id
 * come after the cursor when `p` follows the cursor's partition in the listing order. A time
 * (an incomplete id) includes its whole millisecond: XREVRANGE reads `<ms>` as `<ms>-<max>`,
 * XRANGE as `<ms>-0`.
 */
function rangeOf(p: Partition, latestFirst: boolean, at: LogPosition | undefined): string[] {
  const log = p.keys.log;
  if (at === undefined)
    return latestFirst ? ["XREVRANGE", log, "+", "-"] : ["XRANGE", log, "-", "+"];
  const from = at.kind === "time" ? at.ms : afterId(p, latestFirst, at);
  return latestFirst ? ["XREVRANGE", log, from, "-"] : ["XRANGE", log, from, "+"];
}

function afterId(p: Partition, latestFirst: boolean, at: { id: string; part: number }): string {
  const follows = at.part >= 0 && (latestFirst ? p.index < at.part : p.index > at.part);
  return follows ? at.id : `(${at.id}`;
}

/** Stream ids (`<ms>-<seq>`) in stream order. */
function compareIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split("-").map(Number);
  const [bm = 0, bs = 0] = b.split("-").map(Number);
  return am - bm || as - bs;
}

function parseEvent(entry: Reply): LogEvent {
  const [id, fields] = asArray(entry);
  const f = new Map<string, string>();
  const flat = asArray(fields ?? { kind: "nil", array: true });
  let bytes = 0;
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const value = asText(flat[i + 1]) ?? "";
    f.set(asText(flat[i]) ?? "", value);
    bytes += value.length;
  }
  return {
    id: asText(id) ?? "",
    state: (f.get("state") ?? "CREATED") as MessageState,
    time: Number(f.get("time") ?? 0),
    meta: JSON.parse(f.get("meta") || "{}") as MessageMeta,
    extra: JSON.parse(f.get("extra") || "{}") as Record<string, unknown>,
    bytes,
  };
}
