/**
 * Reply parsing shares each turn of the event loop, all Redis connections of the process
 * together. Every stashd process serves its KV clients, queue deliveries and schedulers from one
 * event loop, and libuv hands over every socket that has data in one poll phase, each with up to
 * 32 reads of 64 KiB: a reply of 300,000 small elements parsed back to back held the loop for
 * about 100 ms, and 200 event streams fed by one pipeline of PUBLISH (each stream on a connection
 * of its own) held it for 1.6 s. So parsing is timed per chunk, and once a turn has spent
 * PARSE_SLICE_MS on it, a connection that gets more data keeps the chunk unparsed, pauses its
 * socket and waits in line; the next turn (setImmediate, after the I/O that other clients sent
 * meanwhile) parses the waiting chunks in order, again up to PARSE_SLICE_MS.
 *
 * A process parsing little pays one clock read before and after each chunk, and one setImmediate
 * per turn once a turn has parsed for RESET_AFTER_MS.
 */

/** Most time spent parsing replies in one turn before the rest waits for the next. */
export const PARSE_SLICE_MS = 5;
/** Parsing time after which a turn schedules the reset of the count (none below it). */
const RESET_AFTER_MS = 1;

/** A connection with chunks kept for a later turn. */
export interface ParseWaiter {
  /** Parses kept chunks while `ParseTurns.hasTime()`; true once none is left. */
  parseKept(): boolean;
}

export class ParseTurns {
  private spent = 0;
  private resetScheduled = false;
  private readonly waiting: ParseWaiter[] = [];

  /** Whether this turn may still parse (and no connection is waiting in line before it). */
  hasTime(): boolean {
    return this.spent < PARSE_SLICE_MS;
  }

  /** Whether a chunk that just arrived must wait: the turn's time is spent or others wait. */
  mustWait(): boolean {
    return this.waiting.length > 0 || this.spent >= PARSE_SLICE_MS;
  }

  /** Counts `ms` of parsing against this turn. */
  spend(ms: number): void {
    this.spent += ms;
    if (this.spent >= RESET_AFTER_MS) this.scheduleNextTurn();
  }

  /** Puts a connection in line for the next turns (once: it calls this with its first kept chunk). */
  wait(waiter: ParseWaiter): void {
    this.waiting.push(waiter);
    this.scheduleNextTurn();
  }

  private scheduleNextTurn(): void {
    if (this.resetScheduled) return;
    this.resetScheduled = true;
    setImmediate(this.nextTurn);
  }

  private readonly nextTurn = (): void => {
    this.resetScheduled = false;
    this.spent = 0;
    let served = 0;
    while (served < this.waiting.length && this.hasTime()) {
      if (!(this.waiting[served] as ParseWaiter).parseKept()) break;
      served++;
    }
    this.waiting.splice(0, served);
    if (this.waiting.length > 0) this.scheduleNextTurn();
  };
}

/** The process's one line (all connections share the event loop). */
export const parseTurns = new ParseTurns();
