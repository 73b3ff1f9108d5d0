import { describe, it } from "vitest";
import { runBenchShort } from "./run-smoke.js";

/**
 * Keeps bench/search.ts working: `--smoke` indexes 2 000 documents in stashd and in SQLite FTS5
 * and runs every query kind a few times (speed is never asserted here).
 */
describe("bench/search.ts --smoke", () => {
  it("runs every measure on both engines and prints the table", async () => {
    await runBenchShort(
      "search.ts",
      ["--smoke"],
      [
        "| indexing: initial scan |",
        "| query: fuzzy |",
        "| query: aggregate |",
        "documents indexed: 2000",
      ],
    );
  }, 120_000);
});
