import { Badge } from "../ui.js";
import { CronWords } from "./cron-words.js";

/** What a schedule's list row says about its last run (GET /v2/schedules). */
export interface ScheduleRun {
  /** Message id → IN_PROGRESS | SUCCESS | FAIL of the last tick's messages. */
  lastScheduleStates?: Record<string, string>;
  /** Why the last tick could not publish (stashd's own field). */
  error?: string;
}

/**
 * "LAST RUN FAILED" when a message of the last tick failed or the tick could not publish, with
 * the reason in its title; nothing when the last run went well or has not finished.
 */
export function LastRun(p: { s: ScheduleRun }) {
  const states = Object.values(p.s.lastScheduleStates ?? {});
  const failed = states.filter((x) => x === "FAIL").length;
  if (!p.s.error && failed === 0) return null;
  const why = p.s.error ?? `${failed} of ${states.length} deliveries of the last run failed`;
  return (
    <span class="last-run-failed" title={why} data-last-run="failed">
      <Badge text="LAST RUN FAILED" /> <span class="hint">{why}</span>
    </span>
  );
}

/** The cron and, beside it, its meaning in words. */
export function CronCell(p: { cron: string }) {
  return (
    <span class="cron-cell">
      <code>{p.cron}</code> <CronWords cron={p.cron} />
    </span>
  );
}
