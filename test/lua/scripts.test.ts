import { describe, expect, it } from "vitest";
import { LuaScript } from "../../src/shared/lua/script.js";
import { assembledScripts } from "../../scripts/lua-catalog.js";
import { useRedisPool } from "../harness/redis-pool.js";

/**
 * Every Lua script of both services, assembled with its includes as the loader does, compiles
 * in a real Redis (SCRIPT LOAD): a syntax error, an include missing or out of order, or more than
 * the 200 locals Lua 5.1 allows in a chunk fails here rather than on the script's first call.
 */
const { pool } = useRedisPool();

describe("Lua scripts", () => {
  const scripts = assembledScripts().map((source) => new LuaScript(source));

  it("finds the scripts of both services", () => {
    const names = scripts.map((s) => s.name);
    expect(names).toEqual(expect.arrayContaining(["claim", "finish", "json-read", "json-write"]));
    expect(new Set(names).size).toBe(names.length);
  });

  it("loads every assembled script into Redis under the loader's SHA", async () => {
    for (const script of scripts) {
      const reply = await pool().exec(["SCRIPT", "LOAD", script.text]);
      expect(reply, script.name).toEqual({ kind: "bulk", value: Buffer.from(script.sha) });
    }
  });

  it("starts each script with a comment naming it and what it does", () => {
    for (const script of scripts) {
      const lines = script.text.split("\n").filter((l) => !l.startsWith("#!"));
      expect(lines[0], script.name).toBe(`-- stashd: ${script.name}.lua with its includes`);
      expect(lines[1], script.name).toMatch(/^-- [\w-]+: \S/);
    }
  });
});
