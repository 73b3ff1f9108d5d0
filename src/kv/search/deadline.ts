import { SearchError } from "./errors.js";

/**
 * A computation's time budget (STASHD_SEARCH_QUERY_TIME_LIMIT_MS for search) and the slice of
 * the event loop it is running in (scheduler.ts). Loops over documents or dictionary terms call
 * `tick()`: the clock is read every 256 ticks; past the budget the computation ends with `late()`
 * thrown, and past the slice `tick()` answers true so the generator yields its turn. The budget
 * counts computing time only, summed over the slices (time spent waiting for a turn or for Redis
 * is not counted). Outside a scheduler (no slice begun) nothing yields: the budget alone applies.
 */
export class Deadline {
  private ticks = 0;
  /** Milliseconds computed in the slices already ended. */
  private spent = 0;
  private sliceStart = performance.now();
  private sliceEnd = Infinity;

  constructor(
    private readonly limitMs: number,
    private readonly late: () => Error = () => searchTooLong(limitMs),
  ) {}

  /** One step of a loop: true when the slice is over (yield now). Throws past the budget. */
  tick(): boolean {
    return (++this.ticks & 255) === 0 && this.due();
  }

  /** Reads the clock now: throws past the budget; true when the slice is over. */
  due(): boolean {
    const now = performance.now();
    if (this.spent + (now - this.sliceStart) > this.limitMs) throw this.late();
    return now >= this.sliceEnd;
  }

  check(): void {
    this.due();
  }

  /** The scheduler gives the computation the event loop until `now + sliceMs`. */
  beginSlice(now: number, sliceMs: number): void {
    this.sliceStart = now;
    this.sliceEnd = now + sliceMs;
  }

  /** The scheduler took the event loop back: the slice's time counts against the budget. */
  endSlice(now: number): void {
    this.spent += now - this.sliceStart;
    this.sliceStart = now;
    this.sliceEnd = Infinity;
  }
}

function searchTooLong(limitMs: number): SearchError {
  return new SearchError(
    `ERR search query took longer than ${limitMs} ms (STASHD_SEARCH_QUERY_TIME_LIMIT_MS): narrow the filter`,
  );
}
