import { describe, expect, it } from "vitest";
import { parseWrk } from "../../bench/http-load.js";
import { runBenchSmoke } from "./run-smoke.js";

/**
 * Keeps bench/kv.ts working: `--smoke` runs every scenario briefly against real processes
 * (stashd from dist/, redis-server, webdis when installed). Speed is never asserted here.
 */
describe("bench/kv.ts --smoke", () => {
  it("runs every scenario and prints the goal table", () => {
    const out = runBenchSmoke("kv.ts", [
      "| stashd GET (JSON body) | 1 |",
      "| stashd SET (path) | 4 |",
      "| stashd /multi-exec 10 GET | 4 |",
      "| stashd /pipeline 100 GET | 1 |",
      "| direct RESP GET -P 100 | 4 |",
      "| /multi-exec 10 cost (1/req/s), c=4 |",
    ]);
    expect(out).toMatch(/stashd RSS: idle/);
  }, 120_000);

  it("reads wrk's report, and refuses one with errors", () => {
    const report = [
      "  2 threads and 50 connections",
      "  Latency Distribution",
      "     50%   76.00us",
      "     75%  102.00us",
      "     90%  150.00us",
      "     99%    1.20ms",
      "  123456 requests in 3.00s, 20.00MB read",
      "Requests/sec:  41152.00",
    ].join("\n");
    expect(parseWrk(report, "x")).toEqual({ rps: 41152, requests: 123456, p50: 0.076, p99: 1.2 });
    expect(() => parseWrk(`${report}\n  Non-2xx or 3xx responses: 3`, "x")).toThrow(/3 non-2xx/);
  });
});
