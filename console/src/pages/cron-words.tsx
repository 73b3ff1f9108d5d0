import cronstrue from "cronstrue";

/**
 * A cron expression in words ("Every 5 minutes"), by cronstrue; the times it names are UTC, as
 * stashd's scheduler reads crons (a `CRON_TZ=` prefix names another zone). An expression it
 * cannot read says so instead of guessing.
 */
export function cronInWords(cron: string): string {
  const tz = /^CRON_TZ=(\S+)\s+/.exec(cron.trim());
  const expr = tz ? cron.trim().slice(tz[0].length) : cron.trim();
  try {
    const words = cronstrue.toString(expr, { use24HourTimeFormat: true, verbose: false });
    return `${words} (${tz?.[1] ?? "UTC"})`;
  } catch {
    return "not a cron expression stashd's words can read";
  }
}

export function CronWords(p: { cron: string }) {
  return (
    <span class="hint" data-cron-words>
      {cronInWords(p.cron)}
    </span>
  );
}
