import path from "node:path";
import type { Reporter, TestModule } from "vitest/node";

/** How many of the slowest test files the summary lists. */
const SLOWEST_SHOWN = 10;

/**
 * Prints the slowest test files (wall time in their worker: import plus tests and hooks, so a
 * file's service start-up counts) and then the plain closing line `N passed, N failed, N skipped`
 * that CI logs are read for. The closing line stays last.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    process.stdout.write(slowestFiles(modules));
    process.stdout.write(`\n${countStates(modules)}\n`);
  }
}

function countStates(modules: ReadonlyArray<TestModule>): string {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  for (const mod of modules) {
    for (const test of mod.children.allTests()) {
      const state = test.result().state;
      if (state === "passed") passed++;
      else if (state === "failed") failed++;
      else skipped++;
    }
  }
  return `${passed} passed, ${failed} failed, ${skipped} skipped`;
}

/** Seconds a file held its worker: collecting (imports, suite callbacks) plus tests and hooks. */
function fileSeconds(mod: TestModule): number {
  const d = mod.diagnostic();
  return (d.collectDuration + d.duration) / 1000;
}

function slowestFiles(modules: ReadonlyArray<TestModule>): string {
  const rows = modules
    .map((mod) => ({
      name: `${mod.project.name}: ${path.relative(process.cwd(), mod.moduleId)}`,
      s: fileSeconds(mod),
    }))
    .sort((a, b) => b.s - a.s)
    .slice(0, SLOWEST_SHOWN);
  if (rows.length === 0) return "";
  const lines = rows.map((r) => `  ${r.s.toFixed(1).padStart(6)} s  ${r.name}`);
  return `\nslowest test files:\n${lines.join("\n")}\n`;
}
