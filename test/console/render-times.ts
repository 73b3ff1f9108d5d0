import { appendFileSync, mkdirSync } from "node:fs";
import { loadavg } from "node:os";
import path from "node:path";
import { ARTIFACTS } from "./harness.js";

/**
 * Records a page's first render time (test-artifacts/console/render-times.txt, one line each
 * with the load average, so docs/console.md can quote them with the conditions) and checks it
 * stays within the target.
 */
export function recordRender(name: string, ms: number): void {
  mkdirSync(ARTIFACTS, { recursive: true });
  const line = `${new Date().toISOString()} ${name}: ${ms} ms (load ${loadavg()[0]?.toFixed(2)})\n`;
  appendFileSync(path.join(ARTIFACTS, "render-times.txt"), line);
}
