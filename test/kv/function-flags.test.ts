import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRedis, testPool, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { bodyOf } from "./helpers.js";

/**
 * Function flags are Lua values (`redis.register_function{…, flags = {…}}`), not a shebang line:
 * Upstash's own example flags a function `allow-key-locking`, which Redis refused ("unknown flag
 * given"), and `allow-oom` let a function write past a managed database's max data size. Now
 * FUNCTION LOAD's code gets a prelude that drops both, and a library that declares `allow-oom`
 * some other way is deleted right after it loads (function-flags.ts).
 */

let stashd: TestStashd;
let bare: TestRedis;

beforeAll(async () => {
  [stashd, bare] = await Promise.all([startStashd({ services: ["kv"] }), startRedis()]);
});
afterAll(async () => {
  await Promise.all([stashd.stop(), bare.stop()]);
});

async function run(argv: unknown[]): Promise<{ result?: unknown; error?: string }> {
  const res = await stashd.kvFetch("/", { body: JSON.stringify(argv) });
  return (await bodyOf(res)) as { result?: unknown; error?: string };
}

/** The flags of one function, from FUNCTION LIST (RESP2: flat maps). */
async function flagsOf(library: string, fn: string): Promise<unknown> {
  const { result } = await run(["FUNCTION", "LIST", "LIBRARYNAME", library]);
  const [lib] = result as unknown[][];
  const functions = lib?.[(lib?.indexOf("functions") ?? 0) + 1] as unknown[][];
  const found = functions.find((f) => f[f.indexOf("name") + 1] === fn) as unknown[];
  return found[found.indexOf("flags") + 1];
}

const EVIL = `#!lua name=evil
local register = redis['register_' .. 'function']
register{function_name = 'evil_write', callback = function(keys) return redis.call('SET', keys[1], 'x') end, flags = {'allow-oom'}}`;

describe("flags of functions (FUNCTION LOAD)", () => {
  it("loads Upstash's allow-key-locking example and runs it", async () => {
    const code = `#!lua name=counters
redis.register_function{
  function_name = 'incr_by',
  callback = function(keys, args) return redis.call('INCRBY', keys[1], args[1]) end,
  flags = {'allow-key-locking'},
}`;
    expect(await run(["FUNCTION", "LOAD", code])).toEqual({ result: "counters" });
    expect(await run(["FCALL", "incr_by", "1", "fn:counter", "5"])).toEqual({ result: 5 });
    expect(await flagsOf("counters", "incr_by")).toEqual([]);
  });

  it("drops allow-oom and keeps the other flags, in the table form and with REPLACE", async () => {
    const code = `#!lua name=reader
redis.register_function('plain_echo', function(_, args) return args[1] end)
redis . register_function { function_name = 'read_len', callback = function(keys) return redis.call('STRLEN', keys[1]) end, flags = {'allow-oom', 'no-writes'} }`;
    expect(await run(["FUNCTION", "LOAD", "REPLACE", code])).toEqual({ result: "reader" });
    expect(await flagsOf("reader", "read_len")).toEqual(["no-writes"]);
    expect(await run(["FCALL", "plain_echo", "0", "hi"])).toEqual({ result: "hi" });
    expect(await run(["FCALL_RO", "read_len", "1", "fn:none"])).toEqual({ result: 0 });
  });

  it("keeps the library's line numbers in Redis's errors", async () => {
    const code = `#!lua name=broken
redis.register_function('fails', function() return redis.call('NOSUCHCMD') end)
local x = = 1`;
    expect((await run(["FUNCTION", "LOAD", code])).error).toMatch(/:3:/);
  });

  it("deletes a library that declares allow-oom some other way, in a pipeline and in a transaction", async () => {
    expect((await run(["FUNCTION", "LOAD", EVIL])).error).toMatch(
      /^ERR functions may not be flagged allow-oom .*library evil was deleted/,
    );
    expect(await run(["FUNCTION", "LIST", "LIBRARYNAME", "evil"])).toEqual({ result: [] });
    const res = await stashd.kvFetch("/multi-exec", {
      body: JSON.stringify([["FUNCTION", "LOAD", EVIL], ["PING"]]),
    });
    const items = (await bodyOf(res)) as { result?: unknown; error?: string }[];
    expect(items[0]?.error).toMatch(/^ERR functions may not be flagged allow-oom/);
    expect(items[1]).toEqual({ result: "PONG" });
    expect(await run(["FUNCTION", "LIST", "LIBRARYNAME", "evil"])).toEqual({ result: [] });
  });

  it("deletes an allow-oom library that FUNCTION RESTORE brought in", async () => {
    const other = testPool(bare.url, 1);
    try {
      await other.exec(["FUNCTION", "LOAD", "REPLACE", EVIL]);
      const dump = await other.exec(["FUNCTION", "DUMP"]);
      if (dump.kind !== "bulk") throw new Error("no dump");
      // The dump is binary: every byte percent-encoded in the path.
      const bytes = [...dump.value].map((b) => `%${b.toString(16).padStart(2, "0")}`).join("");
      const res = await stashd.kvFetch(`/function/restore/${bytes}`, { method: "POST" });
      expect(((await bodyOf(res)) as { error?: string }).error).toMatch(
        /^ERR functions may not be flagged allow-oom .*library evil was deleted/,
      );
      expect(await run(["FUNCTION", "LIST", "LIBRARYNAME", "evil"])).toEqual({ result: [] });
    } finally {
      await other.close();
    }
  });
});
