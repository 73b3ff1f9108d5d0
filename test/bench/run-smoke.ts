import { spawnSync } from "node:child_process";
import { expect } from "vitest";

/**
 * Runs `bench/<script> --smoke` as the README says to run benches (tsx), asserts it exited 0
 * (stderr shown otherwise) and printed every given table row; returns its stdout.
 */
export function runBenchSmoke(script: string, rows: string[]): string {
  const run = spawnSync(process.execPath, ["--import", "tsx", `bench/${script}`, "--smoke"], {
    encoding: "utf8",
    timeout: 100_000,
  });
  expect(run.status, run.stderr).toBe(0);
  for (const row of rows) expect(run.stdout).toContain(row);
  return run.stdout;
}
