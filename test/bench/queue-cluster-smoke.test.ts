import { describe, it } from "vitest";
import { runBenchSmoke } from "./run-smoke.js";

/**
 * Keeps bench/queue-cluster.ts working: `--smoke` starts a real 3-master cluster with fsync'd
 * AOFs, publishes for a second through a stashd with one partition and one with three (each
 * publish delivered to a real receiver), and prints the table. Speed is never asserted here.
 */
describe("bench/queue-cluster.ts --smoke", () => {
  it("publishes with one partition and with one per master and prints the table", () => {
    runBenchSmoke("queue-cluster.ts", [
      "| stashd, 1 partition (one master) |",
      "| stashd, 3 partitions (one per master) |",
      "| redis-benchmark SET --cluster, 3 masters |",
    ]);
  }, 120_000);
});
