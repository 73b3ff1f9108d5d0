/** One page of a filtered listing; `cursor` only when more may follow (omitted on the last page). */
export interface Page<T> {
  items: T[];
  cursor?: string | undefined;
}

/**
 * A chunk of stored entries in listing order; `item` is undefined when filtered out, `bytes` about
 * what the entry weighs as stored (counted against a page's byte budget).
 */
export type ChunkFetcher<T> = (
  after: string | undefined,
  size: number,
) => Promise<{ key: string; item: T | undefined; bytes?: number }[]>;

const CHUNK = 200;

/**
 * What one page may cost: it ends (with a cursor) once its entries weigh `maxBytes`
 * (STASHD_QUEUE_PAGE_MAX_BYTES) or once `maxScanned` stored entries were examined
 * (STASHD_QUEUE_PAGE_MAX_SCANNED), matched or not, so a filter that matches nothing cannot make
 * one request read the whole log.
 */
export interface PageLimits {
  maxBytes?: number;
  maxScanned?: number;
}

/**
 * Reads chunks after the cursor until `count` entries matched, their bytes reached
 * `limits.maxBytes` (at least one entry per page, so a listing always advances), `limits.maxScanned`
 * entries were examined (the page may then be empty, with a cursor), or the data ran out. The
 * cursor is the key of the last entry examined, so a page never repeats or skips entries even when
 * earlier ones were deleted meanwhile.
 */
export async function collectPage<T>(
  fetch: ChunkFetcher<T>,
  count: number,
  cursor: string | undefined,
  limits: PageLimits = {},
): Promise<Page<T>> {
  const { maxBytes = Infinity, maxScanned = Infinity } = limits;
  const items: T[] = [];
  let bytes = 0;
  let scanned = 0;
  let after = cursor;
  for (;;) {
    const size = Math.min(CHUNK, Math.max(1, maxScanned - scanned));
    const chunk = await fetch(after, size);
    for (const [i, entry] of chunk.entries()) {
      after = entry.key;
      scanned++;
      if (entry.item !== undefined) {
        items.push(entry.item);
        bytes += entry.bytes ?? 0;
      }
      if (items.length === count || bytes >= maxBytes || scanned >= maxScanned) {
        const more = i < chunk.length - 1 || chunk.length === size;
        return more ? { items, cursor: after } : { items };
      }
    }
    if (chunk.length < size) return { items };
  }
}
