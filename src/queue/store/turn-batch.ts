/**
 * Group commit for store calls: the calls made during one event-loop turn (the HTTP requests,
 * deliveries and timers whose callbacks ran in it) are handed to `flush` together once the turn's
 * callbacks are done (setImmediate), so that Redis receives them as one script call or one
 * pipeline, and its `appendfsync always` AOF writes and fsyncs them once. Every call still
 * settles only with Redis's own answer to it (after that fsync): nothing is acknowledged early.
 *
 * A turn's calls go out in chunks of at most `maxItems` calls and about `maxBytes` of payload
 * (whichever comes first), so one script call never holds Redis for long.
 */
export class TurnBatch<T, R> {
  private pending: Waiting<T, R>[] = [];
  private scheduled = false;

  /**
   * `flush` gets one chunk and returns one promise per item, in order (a rejected one fails only
   * its own call); `bytes` is an item's payload size.
   */
  constructor(
    private readonly flush: (items: T[]) => Promise<R>[],
    private readonly limits: { maxItems: number; maxBytes: number; bytes: (item: T) => number },
  ) {}

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.send);
      }
    });
  }

  private readonly send = (): void => {
    this.scheduled = false;
    const all = this.pending;
    this.pending = [];
    let start = 0;
    let bytes = 0;
    for (let i = 0; i < all.length; i++) {
      bytes += this.limits.bytes((all[i] as Waiting<T, R>).item);
      const full = i + 1 - start >= this.limits.maxItems || bytes >= this.limits.maxBytes;
      if (full || i === all.length - 1) {
        this.sendChunk(all.slice(start, i + 1));
        start = i + 1;
        bytes = 0;
      }
    }
  };

  private sendChunk(chunk: Waiting<T, R>[]): void {
    let results: Promise<R>[];
    try {
      results = this.flush(chunk.map((c) => c.item));
    } catch (err) {
      for (const c of chunk) c.reject(err);
      return;
    }
    // Settled by `then` rather than resolved with the promise itself: adopting a promise costs
    // two more microtasks per call than one reaction does.
    chunk.forEach((c, i) => {
      const result = results[i];
      if (result) result.then(c.resolve, c.reject);
      else c.reject(new Error("no reply"));
    });
  }
}

/** A call waiting for its turn's flush, and how to settle its promise. */
interface Waiting<T, R> {
  item: T;
  resolve: (r: R) => void;
  reject: (err: unknown) => void;
}
