/**
 * The abort of one delivery attempt: the lease keeper aborts it (lease lost or expiring, message
 * cancelled, shutdown), the HTTP client's timer aborts it (timeout), and the request in flight
 * is cut off by the one listener the client registers. The first reason wins.
 *
 * An AbortController would do, but one per attempt (plus undici's listener on its signal) showed
 * as about 2% of a backlog drain's CPU profile; this holds a field and one callback.
 */
export class AttemptAbort {
  private why: Error | undefined;
  private done = false;
  private listener: ((reason: Error) => void) | undefined;

  get aborted(): boolean {
    return this.done;
  }

  /** Why it was aborted (undefined until then). */
  get reason(): Error | undefined {
    return this.why;
  }

  abort(reason: Error): void {
    if (this.done) return;
    this.done = true;
    this.why = reason;
    this.listener?.(reason);
  }

  /** Sets the one callback told of the abort (a later call replaces it). */
  onAbort(listener: (reason: Error) => void): void {
    this.listener = listener;
  }
}
