import path from "node:path";
import { describe, expect, it } from "vitest";
import { runtimeCycles } from "../../scripts/import-cycles.js";

/**
 * No two source files import each other in a circle at runtime (`npm run check` runs the same
 * check, scripts/check-cycles.ts). The fixtures show what the check sees: a cycle through a
 * re-export and an inline `type` specifier is one, a circle of `import type` is not.
 */
const ROOT = path.resolve(import.meta.dirname, "../..");
const FIXTURES = path.join(import.meta.dirname, "fixtures");

describe("runtime import cycles", () => {
  it("finds none in src/", () => {
    expect(runtimeCycles(path.join(ROOT, "src"), ROOT)).toEqual([]);
  });

  it("finds a deliberately added cycle, through a re-export and an inline `type` import", () => {
    const found = runtimeCycles(path.join(FIXTURES, "cycle"), FIXTURES);
    expect(found).toEqual([
      {
        cycle: ["cycle/a-types.ts", "cycle/a.ts", "cycle/b.ts", "cycle/a-types.ts"],
        members: ["cycle/a-types.ts", "cycle/a.ts", "cycle/b.ts"],
      },
    ]);
  });

  it("does not count `import type` and `export type … from` as a cycle", () => {
    expect(runtimeCycles(path.join(FIXTURES, "type-only-cycle"))).toEqual([]);
  });

  it("resolves folder imports and reports no cycle where there is none", () => {
    expect(runtimeCycles(path.join(FIXTURES, "no-cycle"))).toEqual([]);
  });
});
