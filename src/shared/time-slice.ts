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
