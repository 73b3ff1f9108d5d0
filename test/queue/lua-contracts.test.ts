import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import type { LuaSource } from "../../src/queue/store/scripts.js";

/**
 * Every queue transition in src/queue/store/lua declares its contract in a header named
 * `<name>-<numKeys>:` (BullMQ's file-name convention) and uses exactly the keys it declares.
 */
const DIR = path.resolve("src/queue/store/lua");

function isLuaSource(value: unknown): value is LuaSource {
  const v = value as Partial<LuaSource> | null;
  return typeof v?.name === "string" && typeof v.numKeys === "number" && typeof v.body === "string";
}

async function scripts(): Promise<{ file: string; text: string; script: LuaSource }[]> {
  const out = [];
  for (const file of readdirSync(DIR).filter((f) => f.endsWith(".ts"))) {
    const full = path.join(DIR, file);
    const mod = (await import(pathToFileURL(full).href)) as Record<string, unknown>;
    for (const value of Object.values(mod)) {
      if (isLuaSource(value)) out.push({ file, text: readFileSync(full, "utf8"), script: value });
    }
  }
  return out;
}

describe("Lua transition contracts", () => {
  it("names each script <name>-<numKeys> in its header and uses only declared keys", async () => {
    const all = await scripts();
    expect(all.length).toBeGreaterThanOrEqual(10);
    for (const { file, text, script } of all) {
      const where = `${file}: ${script.name}`;
      expect(text, where).toContain(` * ${script.name}-${script.numKeys}:`);
      const used = [...script.body.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1]));
      expect(Math.max(0, ...used), where).toBeLessThanOrEqual(script.numKeys);
    }
  });

  it("gives every script a unique name", async () => {
    const names = (await scripts()).map((s) => s.script.name);
    expect(new Set(names).size).toBe(names.length);
  });
});
