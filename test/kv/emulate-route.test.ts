import { describe, expect, it } from "vitest";
import type { CommandInfo, CommandTable } from "../../src/kv/policy.js";
import { findEmulation } from "../../src/kv/emulate/route.js";

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
