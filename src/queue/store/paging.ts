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
 * Reads chunks after the cursor until `count` entries matched, their bytes reached `maxBytes`
 * (at least one entry per page, so a listing always advances), or the data ran out. The cursor is
 * the key of the last entry examined, so a page never repeats or skips entries even when earlier
 * ones were deleted meanwhile.
 */
export async function collectPage<T>(
  fetch: ChunkFetcher<T>,
  count: number,
  cursor: string | undefined,
  maxBytes = Infinity,
): Promise<Page<T>> {
  const items: T[] = [];
  let bytes = 0;
  let after = cursor;
  for (;;) {
    const chunk = await fetch(after, CHUNK);
    for (const [i, entry] of chunk.entries()) {
      after = entry.key;
      if (entry.item !== undefined) {
        items.push(entry.item);
        bytes += entry.bytes ?? 0;
      }
      if (items.length === count || bytes >= maxBytes) {
        const more = i < chunk.length - 1 || chunk.length === CHUNK;
        return more ? { items, cursor: after } : { items };
      }
    }
    if (chunk.length < CHUNK) return { items };
  }
}
