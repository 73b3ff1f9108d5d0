import { describe, it } from "vitest";
import { runBenchSmoke } from "./run-smoke.js";

/**
 * Keeps bench/kv-cluster.ts working: `--smoke` starts a real redis-server, a real 3-master
 * cluster and a stashd in front of each, and sends every scenario a few requests (any non-2xx
 * answer fails the run). Speed is never asserted here.
 */
describe("bench/kv-cluster.ts --smoke", () => {
  it("runs every scenario on one Redis and on a cluster and prints the table", () => {
    runBenchSmoke("kv-cluster.ts", [
      "| stashd GET (JSON body) | 1 |",
      "| stashd SET (JSON body) | 4 |",
      "| stashd /pipeline 10 GET, keys on every master | 4 |",
      "| stashd /pipeline 10 GET, one hash tag | 4 |",
      "| redis-benchmark GET | 50 |",
    ]);
  }, 120_000);
});
