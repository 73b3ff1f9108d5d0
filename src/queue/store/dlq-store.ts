import type { Partitions } from "./partitions.js";
import type { QueueRedis } from "./redis.js";
import type { DlqMeta } from "../domain/message.js";
import { queueKeys as K } from "./keys.js";
import { collectPage, type Page } from "./paging.js";
import { asArray, asBuffer, asInt, asText, checked } from "./replies.js";
import { transitions } from "./transitions.js";

export interface DlqEntry {
  meta: DlqMeta;
  body: Buffer;
}

/**
 * Reads of the dead-letter queue. Entries are added by the finish transition; ids are
 * `<unix ms>-<n>`, kept in a zset with score 0 so they sort by time lexicographically, which
 * gives stable cursors (the last id seen) in both orders.
 */
export class DlqStore {
  private readonly pool: QueueRedis;

  constructor(readonly parts: Partitions) {
    this.pool = parts.main.redis;
  }

  async get(id: string): Promise<DlqEntry | undefined> {
    return (await this.load([id]))[0];
  }

  async list(
    latestFirst: boolean,
    count: number,
    cursor: string | undefined,
    keep: (e: DlqEntry) => boolean,
  ): Promise<Page<DlqEntry>> {
    return collectPage(
      async (after, size) => {
        const ids = await this.ids(latestFirst, after, size);
        const entries = await this.load(ids, true);
        return ids.map((id, i) => {
          const e = entries[i];
          return { key: id, item: e && keep(e) ? e : undefined };
        });
      },
      count,
      cursor,
    );
  }

  async delete(ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    return asInt(await transitions.dlqDelete.run(this.pool, [K.dlq], [K.prefix, ...ids]));
  }

  /** Deletes entries that failed before `cutoff` (DLQ retention). */
  async expire(cutoff: number): Promise<number> {
    const reply = await this.pool.exec([
      "ZRANGE",
      K.dlq,
      "-",
      `(${cutoff}`,
      "BYLEX",
      "LIMIT",
      "0",
      "1000",
    ]);
    return this.delete(asArray(checked(reply, "dlq expire")).map((r) => asText(r) ?? ""));
  }

  private async ids(latestFirst: boolean, after: string | undefined, size: number) {
    const from = after === undefined ? (latestFirst ? "+" : "-") : `(${after}`;
    const to = latestFirst ? "-" : "+";
    const args = ["ZRANGE", K.dlq, from, to, "BYLEX", ...(latestFirst ? ["REV"] : [])];
    const reply = await this.pool.exec([...args, "LIMIT", "0", String(size)]);
    return asArray(checked(reply, "dlq list")).map((r) => asText(r) ?? "");
  }

  /** Entries for ids; with `keepGaps` the result is index-aligned (undefined for missing ones). */
  private async load(ids: readonly string[], keepGaps = false): Promise<(DlqEntry | undefined)[]> {
    if (ids.length === 0) return [];
    const replies = await this.pool.execMany(
      ids.map((id) => ["HMGET", K.dlqEntry(id), "meta", "body"]),
    );
    const out = replies.map((r) => {
      const [meta, body] = asArray(checked(r, "dlq get"));
      const text = asText(meta);
      if (text === undefined) return undefined;
      return { meta: JSON.parse(text) as DlqMeta, body: asBuffer(body) ?? Buffer.alloc(0) };
    });
    return keepGaps ? out : out.filter((e) => e !== undefined);
  }
}
