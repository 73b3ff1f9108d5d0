import type { Partition, Partitions } from "./partitions.js";

/**
 * Helpers for store calls that span the queue's partitions (store/partitions.ts): calls by id
 * go to each id's partition, reads of the whole queue ask every partition and merge.
 */

/** `items` grouped by the partition `partOf` names, in input order within each group. */
export function groupBy<T>(
  items: readonly T[],
  partOf: (item: T) => Partition,
): Map<Partition, T[]> {
  const groups = new Map<Partition, T[]>();
  for (const item of items) {
    const p = partOf(item);
    const group = groups.get(p);
    if (group) group.push(item);
    else groups.set(p, [item]);
  }
  return groups;
}

/**
 * Runs `fn` once per partition holding some of `ids` (at once), with those ids, and returns its
 * results index-aligned with `ids` (`fn` returns one result per id it got, in order).
 */
export async function alignedByMessage<R>(
  parts: Partitions,
  ids: readonly string[],
  fn: (p: Partition, ids: string[]) => Promise<readonly R[]>,
): Promise<R[]> {
  const positions = groupBy([...ids.keys()], (i) => parts.ofMessage(ids[i] as string));
  const out = new Array<R>(ids.length);
  await Promise.all(
    [...positions].map(async ([p, at]) => {
      const results = await fn(
        p,
        at.map((i) => ids[i] as string),
      );
      at.forEach((i, j) => (out[i] = results[j] as R));
    }),
  );
  return out;
}

/** Sum of `fn` over the partitions of `ids` (each gets its own ids, at once). */
export async function sumByMessage(
  parts: Partitions,
  ids: readonly string[],
  fn: (p: Partition, ids: string[]) => Promise<number>,
): Promise<number> {
  const groups = groupBy(ids, (id) => parts.ofMessage(id));
  const counts = await Promise.all([...groups].map(([p, group]) => fn(p, group)));
  return counts.reduce((a, b) => a + b, 0);
}

/**
 * The first `size` entries of the sorted `lists` merged by `compare` (ascending): when each list
 * holds its source's first `size` entries after a common bound, these are the first `size` of
 * all sources together (a source's later entries come after its `size` listed ones).
 */
export function mergeSorted<T>(
  lists: readonly (readonly T[])[],
  compare: (a: T, b: T) => number,
  size = Infinity,
): T[] {
  return lists
    .flat()
    .sort(compare)
    .slice(0, size === Infinity ? undefined : size);
}
