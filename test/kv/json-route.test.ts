import { describe, expect, it } from "vitest";
import type { CommandTable } from "../../src/kv/commands/policy.js";
import { EmulationBatch } from "../../src/kv/emulate/batch.js";
import { DELETE_SCRIPT, READ_SCRIPT, WRITE_SCRIPT } from "../../src/kv/json/route.js";

const info = { arity: -2, flags: new Set<string>(), categories: new Set<string>() };
const plain: CommandTable = new Map([["get", info]]);
const withModule: CommandTable = new Map([["json.set", info]]);

describe("routing JSON.* commands", () => {
  it("passes them through untouched when the backend has the JSON module", () => {
    const batch = new EmulationBatch({}, withModule, { fieldTtl: true });
    expect(batch.rewrite(["JSON.SET", "k", "$", "1"], 0)).toBeUndefined();
  });

  it("leaves other commands alone", () => {
    expect(
      new EmulationBatch({}, plain, { fieldTtl: true }).rewrite(["GET", "k"], 0),
    ).toBeUndefined();
  });

  it("sends script text first, the SHA once Redis holds the script, and reads read-only", async () => {
    const owner = {};
    const batch = new EmulationBatch(owner, plain, { fieldTtl: true });
    const first = batch.rewrite(["json.get", "k", "$"], 0);
    expect(first).toEqual(["EVAL_RO", READ_SCRIPT.text, "1", "k", "json.get", "$"]);
    await batch.settle(
      [{ kind: "nil", array: false }],
      [["json.get", "k", "$"]],
      undefined as never,
    );
    const next = new EmulationBatch(owner, plain, { fieldTtl: true });
    expect(next.rewrite(["JSON.GET", "k"], 0)).toEqual([
      "EVALSHA_RO",
      READ_SCRIPT.sha,
      "1",
      "k",
      "json.get",
    ]);
    expect(next.rewrite(["JSON.MGET", "a", "b", "$"], 1)).toEqual([
      "EVALSHA_RO",
      READ_SCRIPT.sha,
      "2",
      "a",
      "b",
      "json.mget",
      "$",
    ]);
    expect(next.rewrite(["JSON.MSET", "a", "$", "1", "b", "$.x", "2"], 2)).toEqual([
      "EVAL",
      WRITE_SCRIPT.text,
      "2",
      "a",
      "b",
      "json.mset",
      "$",
      "1",
      "$.x",
      "2",
    ]);
    // A transaction: the first call of each script carries its text, later ones its SHA.
    const multi = new EmulationBatch(owner, plain, { fieldTtl: true }, true);
    const head = (r: ReturnType<EmulationBatch["rewrite"]>): unknown =>
      Array.isArray(r) ? r.slice(0, 2) : r;
    expect(head(multi.rewrite(["JSON.GET", "k"], 0))).toEqual(["EVAL_RO", READ_SCRIPT.text]);
    expect(head(multi.rewrite(["JSON.TYPE", "k"], 1))).toEqual(["EVALSHA_RO", READ_SCRIPT.sha]);
    expect(head(multi.rewrite(["JSON.SET", "k", "$", "1"], 2))).toEqual([
      "EVAL",
      WRITE_SCRIPT.text,
    ]);
    // JSON.DEL and JSON.FORGET run in the delete-only script (flagged allow-oom).
    expect(head(multi.rewrite(["JSON.DEL", "k"], 3))).toEqual(["EVAL", DELETE_SCRIPT.text]);
  });

  it("answers malformed key lists with Redis's arity error", () => {
    const batch = new EmulationBatch({}, plain, { fieldTtl: true });
    const error = (name: string) => ({
      kind: "error",
      value: `ERR wrong number of arguments for '${name}' command`,
    });
    expect(batch.rewrite(["JSON.GET"], 0)).toEqual(error("json.get"));
    expect(batch.rewrite(["JSON.MGET", "k"], 0)).toEqual(error("json.mget"));
    expect(batch.rewrite(["JSON.MSET", "k", "$"], 0)).toEqual(error("json.mset"));
  });
});
