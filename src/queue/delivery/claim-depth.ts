/**
 * How far a claim looks into the due set. A claim leases due messages in order and skips those of
 * destinations at their share (claim.lua); each skipped entry costs Redis a hash read and a Lua
 * step. With one busy destination and a backlog, every refill of that destination would walk
 * the whole long scan (`long` entries) over its own waiting messages and find nothing else: most
 * of the Redis time of a backlog drain went there.
 *
 * So claims look `short` entries past what they may lease, except:
 * - at least every `everyMs` one claim takes the long scan, so messages of other destinations
 *   waiting behind a saturated one are found within that time;
 * - while the long scans keep finding messages beyond the short reach (their last lease lay
 *   deeper, ClaimResult.deepest), every claim takes the long scan, so a second destination
 *   behind the first keeps its share of claims, as if every scan were long.
 */
export class ClaimDepth {
  /** When the last long scan was handed out (ms). */
  private lastLong = -Infinity;
  /** Claims take the long scan until then (ms): a recent long scan found deep messages. */
  private longUntil = -Infinity;

  constructor(
    private readonly long: number,
    private readonly short: number,
    private readonly everyMs: number,
  ) {}

  /** How many due entries the next claim, leasing at most `limit`, may look at. */
  scan(limit: number, now: number): number {
    const reach = Math.min(this.long, limit + this.short);
    if (now < this.longUntil || now - this.lastLong >= this.everyMs) {
      this.lastLong = now;
      return this.long;
    }
    return reach;
  }

  /** A claim of at most `limit` leased its last message `deepest` entries in (0: none). */
  saw(limit: number, deepest: number, now: number): void {
    if (deepest > limit + this.short) this.longUntil = now + this.everyMs;
  }

  /** A long claim parked entries at `now`: more may wait behind them, so claims look long. */
  keepLong(now: number): void {
    this.longUntil = now + this.everyMs;
  }

  /**
   * When a long scan is next due, after a short one left messages of destinations at their share
   * unclaimed: the caller wakes then, so messages behind them are found within `everyMs` even
   * when no other claim comes (a slow destination, no new publishes).
   */
  nextLongAt(): number {
    return this.lastLong + this.everyMs;
  }
}
