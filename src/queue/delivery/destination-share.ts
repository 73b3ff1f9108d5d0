/**
 * Per-destination fairness of one process's delivery slots: a destination (URL origin: scheme,
 * host and port as written) may hold at most `cap` of them, so a slow or dead one cannot take
 * every slot (see docs/queue.md, Fairness). The claim script skips messages of destinations at
 * their cap, leaving them due in place; this class counts this process's attempts per origin.
 */
export class DestinationShare {
  /** Attempts in flight per origin (origins with none are removed). */
  private readonly inflight = new Map<string, number>();
  /** Origins whose due messages the last claim left because they held their cap. */
  private waiting: ReadonlySet<string> = new Set();
  readonly cap: number;
  /**
   * A destination that reached its cap gets new attempts once it is down to this many: claiming
   * for every single freed slot would cost a claim round trip (an fsync) per delivery, which caps
   * a busy destination at one delivery per fsync. Half the cap, at most `batch`, is freed first.
   */
  private readonly refillAt: number;

  constructor(concurrency: number, sharePercent: number, batch = 64) {
    const share = Math.min(100, Math.max(0, sharePercent));
    this.cap = Math.max(1, Math.floor((concurrency * share) / 100));
    this.refillAt = this.cap - Math.max(1, Math.min(batch, Math.floor(this.cap / 2)));
  }

  /** Whether `origins` (one entry per message, repeats allowed) fit under the cap together. */
  fits(origins: readonly string[]): boolean {
    const wanted = new Map<string, number>();
    for (const o of origins) wanted.set(o, (wanted.get(o) ?? 0) + 1);
    for (const [o, n] of wanted) if ((this.inflight.get(o) ?? 0) + n > this.cap) return false;
    return true;
  }

  /** Records the origins the last claim skipped at their cap (their messages wait due). */
  leftWaiting(origins: Iterable<string>): void {
    this.waiting = new Set(origins);
  }

  /** Whether the last claim left messages waiting for a destination at its cap. */
  get blocked(): boolean {
    return this.waiting.size > 0;
  }

  /**
   * Whether one of `origins` has messages waiting and holds more than its refill level (see
   * `refillAt`): a new message for it joins them in the due set for the next batch claim.
   */
  crowded(origins: readonly string[]): boolean {
    return origins.some((o) => this.waiting.has(o) && (this.inflight.get(o) ?? 0) > this.refillAt);
  }

  /**
   * Whether an origin with waiting messages is at or below its refill level: a claim is due.
   * Checked after a claim, since attempts that end while it runs can take an origin from its cap
   * to below the refill level without `give` seeing it (the cap is reached only when the claim's
   * leases are counted).
   */
  refillDue(): boolean {
    for (const o of this.waiting) if ((this.inflight.get(o) ?? 0) <= this.refillAt) return true;
    return false;
  }

  take(origin: string): void {
    this.inflight.set(origin, (this.inflight.get(origin) ?? 0) + 1);
  }

  /**
   * Gives a slot back; true when the origin just fell to its refill level (see `refillAt`) while
   * it has waiting messages: those may be claimed now, a batch of them at once.
   */
  give(origin: string): boolean {
    const n = this.inflight.get(origin) ?? 0;
    if (n <= 1) this.inflight.delete(origin);
    else this.inflight.set(origin, n - 1);
    return n - 1 === this.refillAt && this.waiting.has(origin);
  }

  /** Attempts in flight per origin, for the claim script. */
  counts(): [string, number][] {
    return [...this.inflight];
  }
}

/**
 * A URL's origin as the claim script computes it from the stored meta (scheme and authority,
 * ASCII-lowercased); the two must agree. A URL without `scheme://` is its own origin.
 */
export function originOf(url: string): string {
  const m = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(url);
  // ASCII only, as Lua's string.lower does.
  return (m ? m[0] : url).replace(/[A-Z]+/g, (s) => s.toLowerCase());
}
