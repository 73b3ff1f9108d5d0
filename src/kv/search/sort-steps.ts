import type { Deadline } from "./deadline.js";
import type { Steps } from "./scheduler.js";

/**
 * `items` sorted by `compare` in place, a slice at a time (scheduler.ts): a bottom-up merge sort
 * that ticks the deadline per element it moves. Stable, like Array.prototype.sort, so for any
 * consistent comparator the order is exactly the one `items.sort(compare)` gives (equal elements
 * keep their order). O(n log n) comparisons and one scratch array of n.
 */
export function* sortSteps<T>(
  items: T[],
  compare: (a: T, b: T) => number,
  deadline: Deadline,
): Steps<T[]> {
  const n = items.length;
  let from = items;
  let to = new Array<T>(n);
  for (let width = 1; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      let i = lo;
      let j = mid;
      for (let k = lo; k < hi; k++) {
        if (deadline.tick()) yield;
        // Takes from the left run on ties: stable.
        if (j >= hi || (i < mid && compare(from[i] as T, from[j] as T) <= 0))
          to[k] = from[i++] as T;
        else to[k] = from[j++] as T;
      }
    }
    [from, to] = [to, from];
  }
  if (from !== items) for (let k = 0; k < n; k++) items[k] = from[k] as T;
  return items;
}
