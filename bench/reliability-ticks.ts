/**
 * Cron schedules for reliability scenario 1 (bench/reliability-processes.ts): creates schedules
 * that fire every minute, and afterwards counts, from the queue's logs, the ticks each one fired
 * per minute: a minute boundary passed while the schedule existed must have fired exactly once.
 */

const MINUTE = 60_000;

/**
 * The scenario's retry back-off: 250 ms flat. Not the default (up to 86 s after a 5th failure, a
 * FIFO queue waiting with its head: longer than the bench waits), and not shorter: the receiver
 * learns that an attempt was aborted (its 1 s timeout) only when its own event loop gets to it,
 * about 30 ms later on a saturated 2-core machine. A retry sent 10 ms after the abort once reached
 * it 3 ms before it saw the abort, and was counted as a second request of the message in flight.
 */
export const RETRY_DELAY = "250";

export interface Api {
  (path: string, init?: RequestInit): Promise<Response>;
}

export interface TickReport {
  schedules: number;
  /** Minute boundaries × schedules that had to fire. */
  expectedTicks: number;
  firedTwice: number;
  missed: number;
  /** Ids of the messages the ticks created (each must be delivered). */
  messageIds: string[];
}

/** Creates `n` schedules `* * * * *` to `target/<i>`; returns their ids. */
export async function createSchedules(api: Api, target: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await api(`/v2/schedules/${target}/${i}`, {
      method: "POST",
      body: `sched-${i}`,
      headers: {
        "upstash-cron": "* * * * *",
        "upstash-retries": "12",
        "upstash-timeout": "1s",
        "upstash-retry-delay": RETRY_DELAY,
      },
    });
    if (res.status !== 200) throw new Error(`schedule create: ${res.status} ${await res.text()}`);
    ids.push(((await res.json()) as { scheduleId: string }).scheduleId);
  }
  return ids;
}

export async function deleteSchedules(api: Api, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    const res = await api(`/v2/schedules/${id}`, { method: "DELETE" });
    if (!res.ok) throw new Error(`schedule delete: ${res.status} ${await res.text()}`);
  }
}

/** The minute boundaries in (from, to]: the ticks a schedule living from `from` to `to` fires. */
export function boundariesBetween(from: number, to: number): number[] {
  const out: number[] = [];
  for (let b = Math.floor(from / MINUTE + 1) * MINUTE; b <= to; b += MINUTE) out.push(b);
  return out;
}

interface CreatedEvent {
  time: number;
  messageId: string;
  scheduleId?: string;
}

/**
 * How far ahead of its minute a tick may be created: the scheduler fires ticks ahead by its lead
 * (STASHD_QUEUE_SCHEDULE_LEAD_MS, 500 ms by default), storing messages due at the tick.
 */
const FIRED_AHEAD_MS = 1_000;

/**
 * Counts the ticks of `ids` from the CREATED events in the logs. `boundaries` are the minutes
 * every schedule had to fire in; a tick belongs to the minute it was created in, or to the next
 * one when created within FIRED_AHEAD_MS before it (a tick fired late by a killed process's fire
 * lease, 30 s, is still within its minute).
 */
export async function countTicks(
  api: Api,
  ids: readonly string[],
  boundaries: readonly number[],
): Promise<TickReport> {
  const report: TickReport = {
    schedules: ids.length,
    expectedTicks: ids.length * boundaries.length,
    firedTwice: 0,
    missed: 0,
    messageIds: [],
  };
  for (const id of ids) {
    const res = await api(`/v2/logs?scheduleId=${id}&state=CREATED&count=1000`);
    const { logs } = (await res.json()) as { logs: CreatedEvent[] };
    const perMinute = new Map<number, number>();
    for (const e of logs) {
      const minute = Math.floor((e.time + FIRED_AHEAD_MS) / MINUTE) * MINUTE;
      perMinute.set(minute, (perMinute.get(minute) ?? 0) + 1);
      report.messageIds.push(e.messageId);
    }
    for (const b of boundaries) {
      const n = perMinute.get(b) ?? 0;
      if (n === 0) report.missed++;
      if (n > 1) report.firedTwice += n - 1;
    }
    const outside = [...perMinute.keys()].filter((m) => !boundaries.includes(m));
    report.firedTwice += outside.length;
  }
  return report;
}
