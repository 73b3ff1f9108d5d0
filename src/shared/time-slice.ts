/**
 * A long loop of work in JS (one request's items, one scan's entries) holds every other client of
 * the process while it runs: each process serves all its requests, deliveries and schedulers from
 * one event loop. A loop that calls `pass()` per step gives the rest a turn (setImmediate, after
 * pending I/O) once it has run for `ms`, and costs one clock read a step otherwise.
 */
export class TimeSlice {
  private until: number;

  constructor(private readonly ms = 5) {
    this.until = performance.now() + ms;
  }

  /** Resolves at once inside the slice; past it, on the event loop's next turn. */
  async pass(): Promise<void> {
    if (performance.now() < this.until) return;
    await new Promise((resolve) => setImmediate(resolve));
    this.until = performance.now() + this.ms;
  }
}

/** Resolves on the event loop's next turn (setImmediate, after pending I/O). */
export const nextTurn = (): Promise<void> =>
  new Promise((resolve) => setImmediate(() => resolve()));

/**
 * Sum of `fn` over `items` taken `size` at a time, one step after another with a turn of the
 * event loop between: a request naming many ids (30,000 in one 1 MB body) becomes short store
 * calls instead of one that holds Redis (cancelling 30,000 messages in one script: 1.5 s) or a
 * fan-out of as many reads at once that holds this process.
 */
export async function sumInSteps<T>(
  items: readonly T[],
  size: number,
  fn: (step: T[]) => Promise<number>,
): Promise<number> {
  let sum = 0;
  for (let i = 0; i < items.length; i += size) {
    if (i > 0) await nextTurn();
    sum += await fn(items.slice(i, i + size));
  }
  return sum;
}
