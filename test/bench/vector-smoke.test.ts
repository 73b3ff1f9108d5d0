import { expect, it } from "vitest";
import { runBenchShort } from "./run-smoke.js";

/** Keeps bench/vector.ts working: a small run, every row printed; its figures are not asserted. */
it("bench/vector.ts measures the exact scan, the graph and VECTOR.QUERY per profile", async () => {
  const out = await runBenchShort(
    "vector.ts",
    ["--smoke"],
    [
      "| exact scan (in process) |",
      "| HNSW ef=40 (in process) |",
      "| VECTOR.QUERY PRECISE (HTTP, @upstash/redis) |",
      "| VECTOR.QUERY BALANCED (HTTP, @upstash/redis) |",
      "| VECTOR.QUERY FAST (HTTP, @upstash/redis) |",
    ],
  );
  expect(out).toMatch(/load: 3000 VECTOR\.ADD in [\d.]+ s/);
}, 120_000);
