/**
 * The rate check of reliability scenario 1 (bench/reliability-processes.ts). A flow-control
 * key's rate limits how many of its messages are admitted per period (retries do not count, see
 * src/queue/store/lua/includes/fc-admit.lua). Admission is not logged, but a message's first claim
 * (its first ACTIVE event, written by the claim script in Redis) follows its admission, after a
 * claim delay of a few ms, or a few hundred on a saturated machine. Claims are read from the
 * logs, not from the receiver, because a process killed between claim and request delays the
 * first request by a whole lease.
 *
 * The limiter admits at most `rate` per period, periods back to back, so any span of `n`
 * periods holds at most `rate * (n + 1)` admissions. The check counts first claims in every
 * sliding span of `spanPeriods` periods against that bound: a claim delay shifts a few claims
 * between spans, a limit not held across processes (three processes admitting `rate` each)
 * exceeds it by far. The most first claims in any one period is reported as well, for reading.
 */
import type { Api } from "./reliability-ticks.js";

export interface RateReport {
  messages: number;
  /** Most first claims seen within one period (informative: claim delays move claims). */
  maxInPeriod: number;
  /** Most first claims seen within `spanPeriods` periods, and the bound for them. */
  maxInSpan: number;
  spanBound: number;
  /** First claims beyond the bound within one span (must be 0). */
  exceeded: number;
}

interface ActiveEvent {
  time: number;
  messageId: string;
}

/** Every ACTIVE event of the key, following the logs' cursor. */
async function activeEvents(api: Api, key: string): Promise<ActiveEvent[]> {
  const out: ActiveEvent[] = [];
  let cursor = "";
  do {
    const q = `flowControlKey=${encodeURIComponent(key)}&state=ACTIVE&count=1000`;
    const res = await api(`/v2/logs?${q}${cursor ? `&cursor=${cursor}` : ""}`);
    const page = (await res.json()) as { logs: ActiveEvent[]; cursor?: string };
    out.push(...page.logs);
    cursor = page.cursor ?? "";
  } while (cursor !== "");
  return out;
}

export async function checkRate(
  api: Api,
  key: string,
  limit: { rate: number; periodMs: number; spanPeriods: number },
): Promise<RateReport> {
  const first = new Map<string, number>();
  for (const e of await activeEvents(api, key)) {
    first.set(e.messageId, Math.min(e.time, first.get(e.messageId) ?? Infinity));
  }
  const times = [...first.values()].sort((a, b) => a - b);
  const spanBound = limit.rate * (limit.spanPeriods + 1);
  const inSpan = maxInWindows(times, limit.periodMs * limit.spanPeriods, spanBound);
  return {
    messages: times.length,
    maxInPeriod: maxInWindows(times, limit.periodMs, limit.rate).max,
    maxInSpan: inSpan.max,
    spanBound,
    exceeded: inSpan.over,
  };
}

/** Over sorted `times`: the most within any window of `windowMs`, and how many came over `bound`. */
function maxInWindows(times: readonly number[], windowMs: number, bound: number) {
  let max = 0;
  let over = 0;
  let start = 0;
  for (let end = 0; end < times.length; end++) {
    while ((times[end] ?? 0) - (times[start] ?? 0) >= windowMs) start++;
    const n = end - start + 1;
    max = Math.max(max, n);
    if (n > bound) over++;
  }
  return { max, over };
}
