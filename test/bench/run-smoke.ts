import { execFile, spawnSync } from "node:child_process";
import { promisify } from "node:util";
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

/**
 * Runs `bench/<script>` with `args` that make it short (for a script without `--smoke`), without
 * blocking this worker's event loop (a long synchronous child would starve vitest's own RPC);
 * asserts it exited 0 and printed every given row; resolves with its stdout.
 */
export async function runBenchShort(
  script: string,
  args: string[],
  rows: string[],
  timeoutMs = 100_000,
): Promise<string> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", `bench/${script}`, ...args],
    { encoding: "utf8", timeout: timeoutMs, maxBuffer: 16 << 20 },
  );
  for (const row of rows) expect(stdout).toContain(row);
  return stdout;
}
