import type { DlqMeta } from "../domain/message.js";
import { collectPage, type Page, type PageLimits } from "./paging.js";
import type { Partition, Partitions } from "./partitions.js";
import { asArray, asBuffer, asText, checked } from "./replies.js";
import { groupBy, mergeSorted } from "./spread.js";
import { nextTurn, sumInSteps } from "../../shared/time-slice.js";
import { transitions } from "./transitions.js";

/** DLQ ids deleted or read per store call (a request may name 30,000: 1 MB of ids). */
const ID_STEP = 200;

export interface DlqEntry {
  meta: DlqMeta;
  body: Buffer;
}

/** A DLQ id as listed, with the partition holding its entry. */
interface Listed {
  id: string;
  p: Partition;
}

/** The keys of lua/dlq-delete.lua. */
const dlqKeys = (p: Partition) => [p.keys.dlq, p.keys.dlqWorkflow];

/** Byte order of ids, the order of a BYLEX range (ids are ASCII). */
const byId = (a: Listed, b: Listed): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * Reads of the dead-letter queue. Entries are added by the finish transition, in the partition of
 * the failed message (so of its `messageId`: a retry's message is placed there too, see
 * MessageStore.retryDlq). Ids are `<unix ms>-<n>` (n random per process, so ids are unique
 * across processes and partitions), kept per partition in a zset with score 0 so they sort by
 * time lexicographically. A listing merges the partitions' ranges after the same cursor (the
 * last id seen, unchanged in form), which gives stable cursors in both orders. A lookup by id asks
 * every partition (the id does not name its partition, and there are few).
 */
export class DlqStore {
  constructor(
    readonly parts: Partitions,
    /** What one page may weigh and read (STASHD_QUEUE_PAGE_MAX_BYTES, _MAX_SCANNED). */
    private readonly pageLimits: PageLimits = {},
  ) {}

  async get(id: string): Promise<DlqEntry | undefined> {
    const found = await this.parts.each((p) => this.load(p, [id]));
    return found.flat().find((e) => e !== undefined);
  }

  async list(
    latestFirst: boolean,
    count: number,
    cursor: string | undefined,
    keep: (e: DlqEntry) => boolean,
  ): Promise<Page<DlqEntry>> {
    return collectPage(
      async (after, size) => {
        const listed = await this.ids(latestFirst, after, size);
        const entries = new Map<string, DlqEntry | undefined>();
        const groups = groupBy(listed, (l) => l.p);
        await Promise.all(
          [...groups].map(async ([p, group]) => {
            const loaded = await this.load(
              p,
              group.map((l) => l.id),
            );
            group.forEach((l, i) => entries.set(l.id, loaded[i]));
          }),
        );
        return listed.map(({ id }) => {
          const e = entries.get(id);
          const bytes = e ? e.body.length + e.meta.responseBodyBase64.length : 0;
          return { key: id, item: e && keep(e) ? e : undefined, bytes };
        });
      },
      count,
      cursor,
      this.pageLimits,
    );
  }

  /** Deletes the entries (looked for in every partition); how many were deleted. */
  async delete(ids: readonly string[]): Promise<number> {
    return sumInSteps(ids, ID_STEP, async (step) => {
      const counts = await this.parts.each(async (p) =>
        transitions.dlqDelete.run(p.redis, dlqKeys(p), [p.keys.prefix, ...step]),
      );
      return counts.reduce((a, b) => a + b, 0);
    });
  }

  /** The entries of `ids` that exist, in order (read as getMany does: for a short list). */
  async getAll(ids: readonly string[]): Promise<DlqEntry[]> {
    const all: DlqEntry[] = [];
    for await (const step of this.getMany(ids)) all.push(...step);
    return all;
  }

  /** The entries of `ids` that exist, in order, read ID_STEP at a time (one step in memory). */
  async *getMany(ids: readonly string[]): AsyncGenerator<DlqEntry[]> {
    for (let i = 0; i < ids.length; i += ID_STEP) {
      if (i > 0) await nextTurn();
      const step = ids.slice(i, i + ID_STEP);
      const found = await this.parts.each((p) => this.load(p, step));
      yield step.flatMap((_, j) => {
        const e = found.map((f) => f[j]).find((x) => x !== undefined);
        return e ? [e] : [];
      });
    }
  }

  /**
   * Puts workflow entries' ids into the workflow index (lua/dlq-index.lua) in every partition
   * that holds them: entries written before the index existed; the startup pass over the
   * workflow DLQ (workflow/repair.ts) calls it. Answers how many were added.
   */
  async indexWorkflow(ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    const counts = await this.parts.each(async (p) =>
      transitions.dlqIndex.run(p.redis, dlqKeys(p), [...ids]),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  /** Deletes entries that failed before `cutoff` (DLQ retention), up to 1000 per partition. */
  async expire(cutoff: number): Promise<number> {
    const counts = await this.parts.each(async (p) => {
      const range = ["ZRANGE", p.keys.dlq, "-", `(${cutoff}`, "BYLEX", "LIMIT", "0", "1000"];
      const ids = asArray(checked(await p.redis.exec(range), "dlq expire")).map(
        (r) => asText(r) ?? "",
      );
      if (ids.length === 0) return 0;
      return transitions.dlqDelete.run(p.redis, dlqKeys(p), [p.keys.prefix, ...ids]);
    });
    return counts.reduce((a, b) => a + b, 0);
  }

  /**
   * The first `size` ids after `after` in listing order over all partitions: each partition's
   * first `size` merged (see mergeSorted).
   */
  private async ids(latestFirst: boolean, after: string | undefined, size: number) {
    const from = after === undefined ? (latestFirst ? "+" : "-") : `(${after}`;
    const to = latestFirst ? "-" : "+";
    const lists = await this.parts.each(async (p): Promise<Listed[]> => {
      const args = ["ZRANGE", p.keys.dlq, from, to, "BYLEX", ...(latestFirst ? ["REV"] : [])];
      const reply = await p.redis.exec([...args, "LIMIT", "0", String(size)]);
      return asArray(checked(reply, "dlq list")).map((r) => ({ id: asText(r) ?? "", p }));
    });
    const order = latestFirst ? (a: Listed, b: Listed) => byId(b, a) : byId;
    return mergeSorted(lists, order, size);
  }

  /** Entries of partition `p` for ids, index-aligned (undefined for missing ones). */
  private async load(p: Partition, ids: readonly string[]): Promise<(DlqEntry | undefined)[]> {
    if (ids.length === 0) return [];
    const replies = await p.redis.execMany(
      ids.map((id) => ["HMGET", p.keys.dlqEntry(id), "meta", "body"]),
    );
    return replies.map((r) => {
      const [meta, body] = asArray(checked(r, "dlq get"));
      const text = asText(meta);
      if (text === undefined) return undefined;
      return { meta: JSON.parse(text) as DlqMeta, body: asBuffer(body) ?? Buffer.alloc(0) };
    });
  }
}
