import { describe, expect, it } from "vitest";
import { runBenchShort } from "./run-smoke.js";

/**
 * bench/workers.ts keeps working: every configuration (defaults first, the worker counts of the
 * scaling curve, tuned) prints every goal row beside its anchor. Figures are not asserted.
 */
describe("bench/workers.ts --smoke", () => {
  it(
    "prints each goal row of issue 29 for the defaults and the tuned configuration",
    { timeout: 240_000 },
    async () => {
      // Asynchronous: a synchronous child this long would starve vitest's own RPC.
      const rows = [
        "| KV POST / GET req/s, c=4 |",
        "| KV POST / SET req/s, c=4 |",
        "| KV /pipeline 100 GET commands/s, c=4 |",
        "| queue durable publishes/s delivered at once, c=4 |",
        "| queue publish->delivery, unloaded (20 samples) |",
        "## 1 worker",
        "## tuned: defaults + STASHD_LOG_LEVEL=warn",
      ];
      const out = await runBenchShort("workers.ts", ["--smoke"], rows, 200_000);
      expect(out).toMatch(/## defaults \((\d+ workers|1 process)\)/);
    },
  );
});
