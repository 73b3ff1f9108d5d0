import type { Partitions } from "./partitions.js";
import type { QueueRedis } from "./redis.js";
import type { Reply } from "../../shared/redis/resp.js";
import type { MessageMeta, MessageState } from "../domain/message.js";
import { queueKeys as K } from "./keys.js";
import { collectPage, type Page } from "./paging.js";
import { asArray, asText, checked } from "./replies.js";

/** One state change as the transitions wrote it to the log stream. */
export interface LogEvent {
  /** Stream id, also the cursor. */
  id: string;
  state: MessageState;
  time: number;
  meta: MessageMeta;
  /** Attempt details: responseStatus, responseHeader, responseBody (base64), error, ... */
  extra: Record<string, unknown>;
}

/**
 * Reads of the log stream (written inside the Lua transitions, trimmed there by retention).
 * Cursors are stream ids, read exclusively, so they stay valid while new events arrive.
 */
export class LogStore {
  private readonly pool: QueueRedis;

  constructor(
    readonly parts: Partitions,
    /** Trimming by MINID is approximate (whole stream nodes), so reads hide older events too. */
    private readonly retentionMs: number,
  ) {
    this.pool = parts.main.redis;
  }

  list(
    latestFirst: boolean,
    count: number,
    cursor: string | undefined,
    keep: (e: LogEvent) => boolean,
  ): Promise<Page<LogEvent>> {
    const cutoff = Date.now() - this.retentionMs;
    return collectPage(
      async (after, size) => {
        const cmd = latestFirst
          ? ["XREVRANGE", K.log, after === undefined ? "+" : `(${after}`, "-"]
          : ["XRANGE", K.log, after === undefined ? "-" : `(${after}`, "+"];
        const reply = checked(await this.pool.exec([...cmd, "COUNT", String(size)]), "logs");
        return asArray(reply).map((entry) => {
          const event = parseEvent(entry);
          const live = event.time >= cutoff;
          return { key: event.id, item: live && keep(event) ? event : undefined };
        });
      },
      count,
      cursor,
    );
  }
}

function parseEvent(entry: Reply): LogEvent {
  const [id, fields] = asArray(entry);
  const f = new Map<string, string>();
  const flat = asArray(fields ?? { kind: "nil", array: true });
  for (let i = 0; i + 1 < flat.length; i += 2)
    f.set(asText(flat[i]) ?? "", asText(flat[i + 1]) ?? "");
  return {
    id: asText(id) ?? "",
    state: (f.get("state") ?? "CREATED") as MessageState,
    time: Number(f.get("time") ?? 0),
    meta: JSON.parse(f.get("meta") || "{}") as MessageMeta,
    extra: JSON.parse(f.get("extra") || "{}") as Record<string, unknown>,
  };
}
