import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assembleLua } from "../../src/shared/lua/assemble.js";
import { LuaScript } from "../../src/shared/lua/script.js";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import { startRedis, testPool, type TestRedis } from "../harness/redis.js";

/** The shared Lua loader: include assembly, SHA calls, NOSCRIPT recovery, read-only scripts. */
let redis: TestRedis;
let pool: RedisPool;
let dir: string;

function write(file: string, lines: string[]): string {
  const full = path.join(dir, file);
  mkdirSync(path.dirname(full), { recursive: true });
  writeFileSync(full, `${lines.join("\n")}\n`);
  return full;
}

beforeAll(async () => {
  redis = await startRedis();
  pool = testPool(redis.url, 2);
  dir = mkdtempSync(path.join(os.tmpdir(), "stashd-lua-"));
  write("includes/a.lua", ["-- a", "local A = 'a'"]);
  write("includes/b.lua", ["-- b, needs a", "--@include a", "local B = A .. 'b'"]);
  write("includes/c.lua", ["-- c, needs d (which needs c)", "--@include d", "local C = 'c'"]);
  write("includes/d.lua", ["--@include c", "local D = 'd'"]);
});
afterAll(async () => {
  await pool?.close();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("assembling a script", () => {
  it("pulls each include in once, before its first use, and maps lines to their files", () => {
    const file = write("s.lua", [
      "#!lua flags=no-writes",
      "-- s: joins",
      "--@keys one two",
      "--@include b",
      "--@include a",
      "return {KEYS[1], B}",
    ]);
    const s = assembleLua(file);
    expect(s.includes).toEqual(["b", "a"]);
    expect(s.keys).toEqual(["one", "two"]);
    const lines = s.text.split("\n");
    expect(lines[0]).toBe("#!lua flags=no-writes");
    expect(lines[1]).toBe("-- stashd: s.lua with its includes");
    expect(lines.filter((l) => l === "local A = 'a'")).toHaveLength(1);
    expect(lines.indexOf("local A = 'a'")).toBeLessThan(lines.indexOf("local B = A .. 'b'"));
    const at = lines.indexOf("local B = A .. 'b'");
    expect(s.lines[at]).toEqual({ file: path.join(dir, "includes/b.lua"), line: 3 });
  });

  it("ends include cycles and reports a missing include with its place", () => {
    const cyclic = assembleLua(write("cyc.lua", ["--@include c", "return C .. D"]));
    expect(cyclic.includes).toEqual(["c", "d"]);
    const missing = write("missing.lua", ["", "--@include nowhere"]);
    expect(() => assembleLua(missing)).toThrow(`${missing}:2: no include`);
  });
});

describe("running a script", () => {
  it("loads it after NOSCRIPT, once for many callers, and repeats the calls", async () => {
    const s = LuaScript.fromFile(
      write("add.lua", [
        "-- add",
        "--@keys counter",
        "return redis.call('INCRBY', KEYS[1], ARGV[1])",
      ]),
    );
    await pool.exec(["SCRIPT", "FLUSH"]);
    await pool.exec(["CONFIG", "RESETSTAT"]);
    const replies = await Promise.all([1, 2, 3, 4].map((n) => s.run(pool, ["n"], [String(n)])));
    expect(replies.map((r) => r.kind)).toEqual(["int", "int", "int", "int"]);
    expect(await pool.exec(["GET", "n"])).toEqual({ kind: "bulk", value: Buffer.from("10") });
    const stats = await pool.exec(["INFO", "commandstats"]);
    const loads = /cmdstat_script\|load:calls=(\d+)/.exec(
      String(stats.kind === "bulk" && stats.value),
    );
    expect(loads?.[1]).toBe("1");
    await expect(s.run(pool, [], ["1"])).rejects.toThrow("takes 1 keys (counter)");
  });

  it("calls a no-writes script read-only, by SHA or with its text", async () => {
    const s = LuaScript.fromFile(
      write("ro.lua", ["#!lua flags=no-writes", "-- ro", "return ARGV[1]"]),
    );
    expect(s.readOnly).toBe(true);
    expect(s.command("sha", [], ["x"])).toEqual(["EVALSHA_RO", s.sha, "0", "x"]);
    expect(s.command("text", [], ["x"])).toEqual(["EVAL_RO", s.text, "0", "x"]);
    expect(await s.run(pool, [], ["x"])).toEqual({ kind: "bulk", value: Buffer.from("x") });
  });
});
