import type { Reply } from "../../shared/redis/resp.js";
import type { MessageMeta, MessageState } from "../domain/message.js";
import { encodeLogCursor, parseLogCursor, type LogPosition } from "../domain/log-cursor.js";
import { collectPage, type Page } from "./paging.js";
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

/** An event as listed, with the partition whose stream holds it. */
interface Listed {
  event: LogEvent;
  part: number;
}

/**
 * Reads of the log streams (written inside the Lua transitions, trimmed there by retention), one
 * per partition. A listing merges them in stream-id order, ties (the same id in two partitions'
 * streams) broken by partition. Cursors (domain/log-cursor.ts: the stream id and partition of the
 * last entry examined, as digits) are read exclusively, so they stay valid while new events
 * arrive: each partition's range starts at the id, inclusive or not by whether the partition
 * comes after the cursor's at that id. A bare stream id given to several partitions is read
 * exclusively in each; a time cursor starts every partition at that millisecond, inclusive.
 */
export class LogStore {
  constructor(
    readonly parts: Partitions,
    /** Trimming by MINID is approximate (whole stream nodes), so reads hide older events too. */
    private readonly retentionMs: number,
    /** A page ends once its events weigh this much (STASHD_QUEUE_PAGE_MAX_BYTES). */
    private readonly pageMaxBytes = Infinity,
  ) {}

  list(
    latestFirst: boolean,
    count: number,
    cursor: string | undefined,
    keep: (e: LogEvent) => boolean,
  ): Promise<Page<LogEvent>> {
    const cutoff = Date.now() - this.retentionMs;
    return collectPage(
      async (after, size) => {
        const listed = await this.read(latestFirst, after, size);
        return listed.map(({ event, part }) => {
          const live = event.time >= cutoff;
          return {
            key: this.cursorOf(event.id, part),
            item: live && keep(event) ? event : undefined,
            bytes: event.bytes,
          };
        });
      },
      count,
      cursor,
      this.pageMaxBytes,
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
      return asArray(checked(reply, "logs")).map((e) => ({ event: parseEvent(e), part: p.index }));
    });
    const ascending = (a: Listed, b: Listed) =>
      compareIds(a.event.id, b.event.id) || a.part - b.part;
    const order = latestFirst ? (a: Listed, b: Listed) => ascending(b, a) : ascending;
    return mergeSorted(lists, order, size);
  }
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
