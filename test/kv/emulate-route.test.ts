import { describe, expect, it } from "vitest";
import type { CommandInfo, CommandTable } from "../../src/kv/commands/policy.js";
import { findEmulation } from "../../src/kv/emulate/route.js";
import { HASH_EMULATION } from "../../src/kv/emulate/hash-route.js";
import { BITOP_EMULATION, STREAM_EMULATION } from "../../src/kv/emulate/streams-route.js";
import { JSON_EMULATION } from "../../src/kv/json/route.js";

const info = (arity: number): CommandInfo => ({ arity, flags: new Set(), categories: new Set() });
const redis70: CommandTable = new Map([
  ["hget", info(3)],
  ["hset", info(-4)],
  ["del", info(-2)],
  ["copy", info(-3)],
]);
const redis82: CommandTable = new Map([...redis70, ["hexpire", info(-6)], ["xdelex", info(-5)]]);
const on = { fieldTtl: true };
const nameOf = (argv: string[], table = redis70, options = on) =>
  findEmulation(argv, table, options)?.[1];

describe("which commands stashd emulates", () => {
  it("takes hash and key commands on a backend without hash-field expiration", () => {
    expect(nameOf(["HGET", "h", "f"])).toBe("hget");
    expect(nameOf(["HEXPIRE", "h", "1", "FIELDS", "1", "f"])).toBe("hexpire");
    expect(nameOf(["DEL", "a", "b"])).toBe("del");
    expect(nameOf(["GET", "a"])).toBeUndefined();
  });

  it("leaves everything native where the backend has it, or when turned off", () => {
    expect(nameOf(["HGET", "h", "f"], redis82)).toBeUndefined();
    expect(nameOf(["HEXPIRE", "h", "1", "FIELDS", "1", "f"], redis82)).toBeUndefined();
    expect(nameOf(["HGET", "h", "f"], redis70, { fieldTtl: false })).toBeUndefined();
    expect(nameOf(["XDELEX", "s", "IDS", "1", "1-1"], redis82)).toBeUndefined();
    expect(nameOf(["BITOP", "DIFF", "d", "a", "b"], redis82)).toBeUndefined();
  });

  it("does not take names an object inherits (constructor, toString) as emulated commands", () => {
    for (const name of ["CONSTRUCTOR", "toString", "__proto__", "hasOwnProperty"]) {
      expect(nameOf([name, "x", "y", "z", "w", "v"])).toBeUndefined();
    }
  });

  it("sends malformed or oversized plain commands to Redis as they are", () => {
    expect(nameOf(["HGET", "h"])).toBeUndefined();
    const huge = ["HSET", "h", ...Array.from({ length: 7_000 }, (_, i) => `f${i}`)];
    expect(nameOf(huge)).toBeUndefined();
    expect(nameOf(["DEL", ...huge.slice(1)])).toBe("del");
  });

  it("takes the Upstash behaviours on any backend", () => {
    expect(nameOf(["COPY", "k", "k"], redis82)).toBe("copy");
    expect(nameOf(["COPY", "k", "j"], redis82)).toBeUndefined();
    const noack = ["XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "s", ">"];
    expect(nameOf(noack, redis82)).toBe("xreadgroup");
    expect(
      nameOf(
        noack.filter((a) => a !== "NOACK"),
        redis82,
      ),
    ).toBeUndefined();
    expect(nameOf(["BITOP", "AND", "d", "a"])).toBeUndefined();
    expect(nameOf(["BITOP", "ONE", "d", "a"])).toBe("bitop");
  });
});

describe("the per-name cache of which commands may be emulated", () => {
  const emulations = [JSON_EMULATION, HASH_EMULATION, STREAM_EMULATION, BITOP_EMULATION];
  const withHkeys: CommandTable = new Map([...redis70, ["hkeys", info(2)]]);
  const argvs = [
    ["JSON.SET", "k", "$", "{}"],
    ["json.get", "k"],
    ["HGET", "h", "f"],
    ["HEXPIRE", "h", "1", "FIELDS", "1", "f"],
    ["DEL", "a"],
    ["COPY", "k", "k"],
    ["XDELEX", "s", "IDS", "1", "1-1"],
    ["XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "s", ">"],
    ["BITOP", "ONE", "d", "a"],
    ["GET", "a"],
  ];

  it("says yes for every name an emulation claims", () => {
    for (const table of [redis70, redis82])
      for (const options of [on, { fieldTtl: false }])
        for (const argv of argvs)
          for (const e of emulations) {
            const name = e.claims(argv, table, options);
            if (name !== undefined) expect(e.mayClaim(name, table, options)).toBe(true);
          }
  });

  it("answers per backend, option, casing and name form, however often asked", () => {
    for (let round = 0; round < 2; round++) {
      expect(nameOf(["HGET", "h", "f"])).toBe("hget");
      expect(nameOf(["hGet", "h", "f"], redis82)).toBeUndefined();
      expect(nameOf(["HGET", "h", "f"], redis70, { fieldTtl: false })).toBeUndefined();
      expect(nameOf(["Json.Set", "k", "$", "{}"])).toBe("json.set");
      const buffers = (argv: string[]) => argv.map((a) => Buffer.from(a));
      expect(findEmulation(buffers(["JSON.GET", "k"]), redis70, on)?.[1]).toBe("json.get");
      expect(findEmulation(buffers(["GET", "k"]), redis70, on)).toBeUndefined();
    }
  });

  it("still asks the emulations about a non-ASCII name (it may lower-case to an ASCII one)", () => {
    // "H\u212AEYS" (KELVIN SIGN) lower-cases to "hkeys", as the emulations decode the name.
    const kelvin = [Buffer.from("H\u212AEYS"), Buffer.from("h")];
    expect(findEmulation(kelvin, withHkeys, on)?.[1]).toBe("hkeys");
    expect(findEmulation(["H\u212AEYS", "h"], withHkeys, on)?.[1]).toBe("hkeys");
  });
});
