import { describe, expect, it } from "vitest";
import { MORE_STOPS, TOUR_STOPS } from "../console/tour-stops.js";
import { runBenchShort } from "./run-smoke.js";

/**
 * bench/console.ts keeps working: on a tiny seed it opens every console page cold once and prints
 * a row of figures for each, the goal line and the load before and after. Figures are not asserted.
 */
describe("bench/console.ts --smoke", () => {
  it(
    "prints a row for every page, the goals (cold and in app) and the load",
    { timeout: 200_000 },
    async () => {
      const rows = [...TOUR_STOPS, ...MORE_STOPS].map((s) => `| ${s.name} | `);
      const out = await runBenchShort("console.ts", ["--smoke"], rows, 180_000);
      expect(out).toMatch(/^uptime before: .*load average/m);
      expect(out).toMatch(/^uptime after: .*load average/m);
      for (const how of ["opened cold", "in app"]) {
        const goal = `goal, ${how}: every page ≤ 300 ms, the 10,000-field key ≤ 500 ms: `;
        expect(out).toMatch(new RegExp(`^${goal}(met|not met \\()`, "m"));
      }
      // Every row has its figures (a page that never rendered would have failed the run).
      expect(out).not.toMatch(/\| NaN \|/);
    },
  );
});
