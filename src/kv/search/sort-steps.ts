import type { Deadline } from "./deadline.js";
import type { Steps } from "./scheduler.js";

/** Elements sorted natively in one piece (about a millisecond): the merges start from runs this long. */
const RUN = 1024;

/**
 * `items` sorted by `compare` in place, a slice at a time (scheduler.ts): runs of RUN elements
 * sorted natively (Array.prototype.sort, stable), then a bottom-up merge that ticks the deadline
 * per element it moves. Stable throughout, so for any consistent comparator the order is exactly
 * the one `items.sort(compare)` gives (equal elements keep their order). O(n log n) comparisons
 * and one scratch array of n; measured 1.3-2 times the native sort on 30 000 pairs (a loaded machine).
 */
export function* sortSteps<T>(
  items: T[],
  compare: (a: T, b: T) => number,
  deadline: Deadline,
): Steps<T[]> {
  const n = items.length;
  for (let lo = 0; lo < n; lo += RUN) {
    if (deadline.due()) yield;
    const run = items.slice(lo, lo + RUN).sort(compare);
    for (let k = 0; k < run.length; k++) items[lo + k] = run[k] as T;
  }
  let from = items;
  let to = new Array<T>(n);
  for (let width = RUN; width < n; width *= 2) {
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

/**
 * The first `count` of `items` in `compare` order, a slice at a time: a bounded heap holding the
 * best `count` seen (the worst of them at its root), O(n log count), then sorted. For a
 * comparator that is a strict total order (ranking ends ties by key, and keys are unique) the
 * result is exactly `items.sort(compare).slice(0, count)`.
 */
export function* firstSteps<T>(
  items: readonly T[],
  count: number,
  compare: (a: T, b: T) => number,
  deadline: Deadline,
): Steps<T[]> {
  if (count <= 0) return [];
  const heap: T[] = [];
  for (const item of items) {
    if (deadline.tick()) yield;
    if (heap.length < count) {
      heap.push(item);
      siftUp(heap, heap.length - 1, compare);
    } else if (compare(item, heap[0] as T) < 0) {
      heap[0] = item;
      siftDown(heap, compare);
    }
  }
  return heap.sort(compare);
}

/** Max-heap by `compare` (the element that sorts last at the root). */
function siftUp<T>(heap: T[], at: number, compare: (a: T, b: T) => number): void {
  while (at > 0) {
    const parent = (at - 1) >> 1;
    if (compare(heap[parent] as T, heap[at] as T) >= 0) return;
    [heap[parent], heap[at]] = [heap[at] as T, heap[parent] as T];
    at = parent;
  }
}

function siftDown<T>(heap: T[], compare: (a: T, b: T) => number): void {
  const n = heap.length;
  let at = 0;
  for (;;) {
    const l = 2 * at + 1;
    const r = l + 1;
    let last = at;
    if (l < n && compare(heap[l] as T, heap[last] as T) > 0) last = l;
    if (r < n && compare(heap[r] as T, heap[last] as T) > 0) last = r;
    if (last === at) return;
    [heap[last], heap[at]] = [heap[at] as T, heap[last] as T];
    at = last;
  }
}
