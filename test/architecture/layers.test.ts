import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The layering rules of docs/architecture.md, checked on the import lines of every source file:
 * the two services never import each other, `src/shared` imports neither a service nor the
 * config, and `src/config` imports nothing but `src/shared`.
 */
const SRC = path.resolve(import.meta.dirname, "../../src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith(".ts") ? [full] : [];
  });
}

/** Top-level folder under src/ of every relative import of `file` (e.g. "shared", "kv"). */
function importedAreas(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const specs = [...text.matchAll(/from\s+"(\.[^"]+)"/g)].map((m) => m[1] ?? "");
  return specs.map(
    (s) => path.relative(SRC, path.resolve(path.dirname(file), s)).split(path.sep)[0] ?? "",
  );
}

function violations(area: string, forbidden: readonly string[]): string[] {
  return sourceFiles(path.join(SRC, area)).flatMap((file) =>
    importedAreas(file)
      .filter((a) => forbidden.includes(a))
      .map((a) => `${path.relative(SRC, file)} imports src/${a}`),
  );
}

describe("layers", () => {
  it("keeps the KV gateway and the queue apart", () => {
    expect(violations("kv", ["queue"])).toEqual([]);
    expect(violations("queue", ["kv"])).toEqual([]);
  });

  it("keeps src/shared free of services and config", () => {
    expect(violations("shared", ["kv", "queue", "config", "cli", "admin"])).toEqual([]);
  });

  it("lets src/config depend on src/shared only", () => {
    expect(violations("config", ["kv", "queue", "cli", "admin"])).toEqual([]);
  });
});
