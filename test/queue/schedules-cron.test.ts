import { describe, expect, it } from "vitest";
import { parseCron } from "../../src/queue/scheduler/cron.js";

const at = (iso: string): number => Date.parse(iso);

describe("Upstash-Cron parsing and next ticks (fixed clock)", () => {
  it("computes the next and latest tick of a 5-field cron in UTC", () => {
    const c = parseCron("*/15 * * * *");
    expect(c.next(at("2026-01-01T00:07:30Z"))).toBe(at("2026-01-01T00:15:00Z"));
    // strictly after: a tick exactly now is not the next one
    expect(c.next(at("2026-01-01T00:15:00Z"))).toBe(at("2026-01-01T00:30:00Z"));
    expect(c.latest(at("2026-01-01T00:44:59Z"))).toBe(at("2026-01-01T00:30:00Z"));
    expect(c.latest(at("2026-01-01T00:45:00Z"))).toBe(at("2026-01-01T00:45:00Z"));
  });

  it("trims surrounding whitespace and collapses inner runs", () => {
    expect(parseCron("  */10 *  * * *  ").text).toBe("*/10 * * * *");
  });

  it("evaluates in the zone of a CRON_TZ= prefix", () => {
    const c = parseCron("CRON_TZ=America/New_York 0 9 * * *");
    expect(c.timezone).toBe("America/New_York");
    expect(c.text).toBe("CRON_TZ=America/New_York 0 9 * * *");
    expect(c.next(at("2026-01-01T00:00:00Z"))).toBe(at("2026-01-01T14:00:00Z"));
    // summer time: 09:00 EDT is 13:00 UTC
    expect(c.next(at("2026-07-01T00:00:00Z"))).toBe(at("2026-07-01T13:00:00Z"));
  });

  it("uses the usual OR of day-of-month and day-of-week", () => {
    const c = parseCron("0 0 13 * 5"); // the 13th, or any Friday
    expect(c.next(at("2026-01-01T12:00:00Z"))).toBe(at("2026-01-02T00:00:00Z"));
    expect(c.next(at("2026-01-10T12:00:00Z"))).toBe(at("2026-01-13T00:00:00Z"));
  });

  it.each([
    ["* * * * * *", "6 fields (seconds) are not part of the API"],
    ["* * * *", "4 fields"],
    ["61 * * * *", "minute out of range"],
    ["hello", "garbage"],
    ["CRON_TZ=Nowhere/Special * * * * *", "unknown zone"],
    ["0 0 30 2 *", "never fires"],
  ])("refuses %j (%s) with a 400", (raw) => {
    expect(() => parseCron(raw)).toThrow(expect.objectContaining({ status: 400 }));
  });
});
