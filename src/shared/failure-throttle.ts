import { AppError } from "./errors.js";

export interface FailureThrottleOptions {
  /** Failures one key (a client address, a principal) may have per window; then it is refused. */
  perKey: number;
  /** Failures of all keys together per window; then every key is refused until it ends. */
  global: number;
  /** Length of the fixed window the failures are counted in. */
  windowMs: number;
  /** What is throttled, in the error message, e.g. "console login". */
  what: string;
  /** Start of error messages (`ERR ` on the KV gateway). */
  errorPrefix?: string;
  /** Most keys remembered; the oldest window is forgotten first, so a spray of keys cannot grow memory. */
  maxKeys?: number;
  now?: () => number;
}

interface Window {
  start: number;
  failures: number;
}

/**
 * Limits guessing: a fixed budget of failed attempts per key and per window, and one for all keys
 * together (against guesses spread over many addresses). Usage, around any secret check:
 *
 *     throttle.check(key);            // throws 429 + Retry-After while the key is over budget
 *     if (!sameSecret(given, real)) { throttle.fail(key); throw unauthorized; }
 *     throttle.succeed(key);          // optional: forgets the key's failures
 *
 * `check` runs before the secret is compared and its answer depends only on counts, never on the
 * guess, so it leaks nothing about the secret; a refused attempt is not compared at all (a right
 * guess during a lock-out is refused too, else the lock-out would still answer guesses).
 */
export class FailureThrottle {
  private readonly keys = new Map<string, Window>();
  private all: Window = { start: 0, failures: 0 };
  private readonly now: () => number;

  constructor(private readonly opts: FailureThrottleOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** Throws a 429 with Retry-After when `key`, or everyone, used the window's failure budget. */
  check(key: string): void {
    const now = this.now();
    const own = this.current(this.keys.get(key), now);
    const all = this.current(this.all, now);
    const over =
      own && own.failures >= this.opts.perKey
        ? own
        : all && all.failures >= this.opts.global
          ? all
          : undefined;
    if (!over) return;
    const retryAfterS = Math.max(1, Math.ceil((over.start + this.opts.windowMs - now) / 1000));
    const who = over === all ? "from all clients" : "from this client";
    throw new AppError(
      "too_many_requests",
      `${this.opts.errorPrefix ?? ""}too many failed ${this.opts.what} attempts ${who}; retry in ${retryAfterS} s`,
      { headers: { "retry-after": String(retryAfterS) } },
    );
  }

  /** Counts one failed attempt of `key`. */
  fail(key: string): void {
    const now = this.now();
    this.all = this.current(this.all, now) ?? { start: now, failures: 0 };
    this.all.failures++;
    let own = this.current(this.keys.get(key), now);
    if (!own) {
      this.keys.delete(key);
      this.forgetOldest(now);
      own = { start: now, failures: 0 };
      this.keys.set(key, own);
    }
    own.failures++;
  }

  /** Forgets `key`'s failures (after a success); the global count stays. */
  succeed(key: string): void {
    this.keys.delete(key);
  }

  /** The window if it is still running. */
  private current(w: Window | undefined, now: number): Window | undefined {
    return w && now - w.start < this.opts.windowMs ? w : undefined;
  }

  /** Keeps the map within maxKeys: ended windows go first, then the oldest (Map order). */
  private forgetOldest(now: number): void {
    const max = this.opts.maxKeys ?? 10_000;
    if (this.keys.size < max) return;
    for (const [k, w] of this.keys) if (!this.current(w, now)) this.keys.delete(k);
    while (this.keys.size >= max) {
      const oldest = this.keys.keys().next().value;
      if (oldest === undefined) break;
      this.keys.delete(oldest);
    }
  }
}
