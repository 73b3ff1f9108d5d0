import { describe, it } from "vitest";
import { runBenchSmoke } from "./run-smoke.js";

/**
 * bench/workers.ts keeps working: every configuration (defaults first, the worker counts of the
 * scaling curve, tuned) prints every goal row beside its anchor. Figures are not asserted.
 */
describe("bench/workers.ts --smoke", () => {
  it(
    "prints each goal row of issue 29 for the defaults and the tuned configuration",
    { timeout: 150_000 },
    () => {
      const out = runBenchSmoke("workers.ts", [
        "| KV POST / GET req/s, c=4 |",
        "| KV POST / SET req/s, c=4 |",
        "| KV /pipeline 100 GET commands/s, c=4 |",
        "| queue durable publishes/s delivered at once, c=4 |",
        "| queue publish->delivery, unloaded (20 samples) |",
        "## 1 worker",
        "## tuned: defaults + STASHD_LOG_LEVEL=warn",
      ]);
      if (!/## defaults \((\d+ workers|1 process)\)/.test(out))
        throw new Error(`no defaults:\n${out}`);
    },
  );
});
