/**
 * How one claim is spread over the queue's partitions (MessageStore.claim). A claim is a round
 * of claim scripts, one per partition, run at once; each gets a share of the claim's `limit`,
 * split evenly with the odd slots going to the partitions from a rotating start, so the shares
 * never add up to more than `limit` and no partition is always served last. Slots a partition
 * left unused go to the others in further rounds (work-conserving): only to partitions that
 * filled their share or stopped at a destination's partial share (see `fairnessOf`), so an idle
 * partition is not asked again within the claim.
 */

/** `total` split over `n` takers as evenly as possible, the odd units to the first ones. */
export function split(total: number, n: number): number[] {
  const base = Math.floor(total / n);
  const extra = total % n;
  return Array.from({ length: n }, (_, i) => base + (i < extra ? 1 : 0));
}

/** `items` rotated left by `start` (mod length). */
export function rotate<T>(items: readonly T[], start: number): T[] {
  const s = items.length === 0 ? 0 : start % items.length;
  return [...items.slice(s), ...items.slice(0, s)];
}

/** The per-destination limit passed to one claim script (see lua/claim.lua ARGV[7..]). */
export interface ScriptFairness {
  cap: number;
  inflight: [string, number][];
}

/**
 * The per-destination limit of each of `m` claim scripts run at once: every origin's remaining
 * budget (`cap` minus the attempts `counts` has for it) is split into `m` parts rounded up, so
 * the scripts together take at most `m - 1` more than the budget (never more than that over the
 * whole claim: a later round splits only what is left). With `m` = 1 this is `cap` and `counts`
 * unchanged; `cap` 0 (no limit) stays 0.
 */
export function fairnessOf(cap: number, counts: ReadonlyMap<string, number>, m: number) {
  if (cap === 0) return { cap: 0, inflight: [...counts] };
  const part = Math.ceil(cap / m);
  const inflight = [...counts].map(([origin, n]): [string, number] => [
    origin,
    part - Math.ceil(Math.max(0, cap - n) / m),
  ]);
  return { cap: part, inflight } satisfies ScriptFairness;
}
