import { Cron } from "croner";
import { AppError } from "../../shared/errors.js";

/**
 * `Upstash-Cron` (docs/qstash-protocol.md §2.6): a standard 5-field cron, evaluated in UTC unless
 * prefixed with `CRON_TZ=<IANA zone> `; surrounding whitespace is trimmed. Parsing and next-tick
 * computation are croner's (5-part mode, day-of-month OR day-of-week as in Vixie cron); the public
 * API takes exactly 5 fields, so a tick is always a whole minute.
 */
export interface CronSchedule {
  /** The expression as stored and shown (trimmed, inner whitespace collapsed). */
  text: string;
  timezone: string;
  /** The first tick strictly after `afterMs`, or undefined when there is none. */
  next(afterMs: number): number | undefined;
  /** The latest tick at or before `atMs`, or undefined when there is none. */
  latest(atMs: number): number | undefined;
}

export function parseCron(raw: string): CronSchedule {
  const text = raw.trim().replace(/\s+/g, " ");
  const m = /^CRON_TZ=(\S+) (.*)$/i.exec(text);
  const timezone = m?.[1] ?? "UTC";
  const pattern = m?.[2] ?? text;
  let cron: Cron;
  try {
    cron = new Cron(pattern, { mode: "5-part", timezone, paused: true });
  } catch (err) {
    throw invalid(raw, err);
  }
  const schedule: CronSchedule = {
    text,
    timezone,
    next: byMinute((afterMs) => cron.nextRun(new Date(afterMs))?.getTime()),
    latest: byMinute((atMs) => cron.previousRuns(1, new Date(atMs + 1))[0]?.getTime()),
  };
  try {
    // croner checks the zone only when computing; an expression that never fires is refused too.
    if (schedule.next(Date.now()) === undefined) {
      throw new Error("the expression never fires");
    }
  } catch (err) {
    throw invalid(raw, err);
  }
  return schedule;
}

/**
 * Remembers `f`'s answer for the last minute it was asked about. Ticks are whole minutes (and
 * zone offsets whole minutes too), so the first tick after, or the latest at or before, any
 * moment of a minute is the same as for the minute's start. A cron tick fires every schedule of
 * the same expression in the same minute: croner computes it once, not once per schedule.
 */
function byMinute(f: (ms: number) => number | undefined): (ms: number) => number | undefined {
  let minute = Number.NaN;
  let answer: number | undefined;
  return (ms) => {
    const m = Math.floor(ms / 60_000);
    if (m !== minute) {
      answer = f(m * 60_000);
      minute = m;
    }
    return answer;
  };
}

function invalid(raw: string, err: unknown): AppError {
  const reason = err instanceof Error ? err.message : String(err);
  return new AppError("bad_request", `invalid Upstash-Cron ${JSON.stringify(raw)}: ${reason}`);
}

const cache = new Map<string, CronSchedule>();

/** parseCron for stored (already valid) expressions, memoized: every tick of a schedule needs it. */
export function cachedCron(text: string): CronSchedule {
  let c = cache.get(text);
  if (!c) {
    if (cache.size >= 10_000) cache.clear();
    c = parseCron(text);
    cache.set(text, c);
  }
  return c;
}
