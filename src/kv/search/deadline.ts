import { SearchError } from "./errors.js";

/**
 * A query's time budget (STASHD_SEARCH_QUERY_TIME_LIMIT_MS). Loops over documents or dictionary
 * terms call `tick()`; the clock is read every 256 ticks, and past the budget the query ends with
 * an error rather than holding the event loop (every request of the process shares it).
 */
export class Deadline {
  private ticks = 0;
  private readonly end: number;

  constructor(private readonly limitMs: number) {
    this.end = Date.now() + limitMs;
  }

  tick(): void {
    if ((++this.ticks & 255) === 0) this.check();
  }

  check(): void {
    if (Date.now() > this.end) {
      throw new SearchError(
        `ERR search query took longer than ${this.limitMs} ms (STASHD_SEARCH_QUERY_TIME_LIMIT_MS): narrow the filter`,
      );
    }
  }
}
