import { describe, expect, it } from "vitest";
import { useCompat, type Compat } from "./context.js";

let c: Compat;
let k: (name: string) => string;

useCompat((ready) => {
  c = ready;
  k = ready.key;
});

describe("@upstash/redis streams", () => {
  it("adds, ranges, reads and trims entries", async () => {
    const { sdk } = c;
    const s = k("stream");
    expect(await sdk.xadd(s, "1-1", { temp: 20, city: "Oslo" })).toBe("1-1");
    expect(await sdk.xadd(s, "1-2", { temp: 21 })).toBe("1-2");
    const auto = await sdk.xadd(s, "*", { temp: 22 });
    expect(auto).toMatch(/^\d+-\d+$/);
    expect(await sdk.xlen(s)).toBe(3);
    expect(await sdk.xrange(s, "-", "1-2")).toEqual({
      "1-1": { temp: 20, city: "Oslo" },
      "1-2": { temp: 21 },
    });
    expect(await sdk.xrevrange(s, "+", "-", 1)).toEqual({ [auto]: { temp: 22 } });
    expect(await sdk.xread(s, "1-1")).toEqual([
      [
        s,
        [
          ["1-2", ["temp", 21]],
          [auto, ["temp", 22]],
        ],
      ],
    ]);
    expect(await sdk.xdel(s, ["1-2"])).toBe(1);
    expect(await sdk.xtrim(s, { strategy: "MAXLEN", threshold: 1, exactness: "=" })).toBe(1);
    expect(await sdk.xlen(s)).toBe(1);
  });

  it("runs consumer groups: read, pending, claim, ack", async () => {
    const { sdk } = c;
    const s = k("jobs");
    const g = { type: "CREATE", group: "workers", id: "0", options: { MKSTREAM: true } } as const;
    expect(await sdk.xgroup(s, g)).toBe("OK");
    expect(await sdk.xgroup(s, { type: "CREATECONSUMER", group: "workers", consumer: "c2" })).toBe(
      1,
    );
    await sdk.xadd(s, "5-1", { job: "a" });
    await sdk.xadd(s, "5-2", { job: "b" });
    expect(await sdk.xreadgroup("workers", "c1", s, ">", { count: 10 })).toEqual([
      [
        s,
        [
          ["5-1", ["job", "a"]],
          ["5-2", ["job", "b"]],
        ],
      ],
    ]);
    expect(await sdk.xpending(s, "workers", "-", "+", 10)).toEqual([
      ["5-1", "c1", expect.any(Number), 1],
      ["5-2", "c1", expect.any(Number), 1],
    ]);
    expect(await sdk.xack(s, "workers", "5-1")).toBe(1);
    expect(await sdk.xclaim(s, "workers", "c2", 0, "5-2", { justId: true })).toEqual(["5-2"]);
    expect(await sdk.xautoclaim(s, "workers", "c1", 0, "0-0", { count: 5, justId: true })).toEqual([
      "0-0",
      ["5-2"],
      [],
    ]);
    const groups = (await sdk.xinfo(s, { type: "GROUPS" })) as unknown[][];
    expect(groups[0]?.slice(0, 2)).toEqual(["name", "workers"]);
    const consumers = (await sdk.xinfo(s, { type: "CONSUMERS", group: "workers" })) as unknown[][];
    expect(consumers.map((row) => row[1]).sort()).toEqual(["c1", "c2"]);
    expect(await sdk.xgroup(s, { type: "SETID", group: "workers", id: "$" })).toBe("OK");
    expect(await sdk.xgroup(s, { type: "DELCONSUMER", group: "workers", consumer: "c2" })).toBe(0);
    expect(await sdk.xgroup(s, { type: "DESTROY", group: "workers" })).toBe(1);
    expect(await sdk.exec(["XINFO", "STREAM", k("jobs")])).toContain("length");
  });
});

describe("@upstash/redis scripting", () => {
  it("runs EVAL, EVAL_RO, EVALSHA and EVALSHA_RO", async () => {
    const { sdk } = c;
    const script = "redis.call('SET', KEYS[1], ARGV[1]); return {KEYS[1], ARGV[1], 42}";
    expect(await sdk.eval(script, [k("ev")], ["val"])).toEqual([k("ev"), "val", 42]);
    expect(await sdk.evalRo("return redis.call('GET', KEYS[1])", [k("ev")], [])).toBe("val");
    const sha = await sdk.scriptLoad("return ARGV[1] .. '!'");
    expect(sha).toMatch(/^[0-9a-f]{40}$/);
    expect(await sdk.scriptExists(sha, "0".repeat(40))).toEqual([1, 0]);
    expect(await sdk.evalsha(sha, [], ["hi"])).toBe("hi!");
    expect(await sdk.evalshaRo(sha, [], ["ro"])).toBe("ro!");
    expect(await sdk.scriptFlush()).toBe("OK");
    await expect(sdk.evalsha(sha, [], ["hi"])).rejects.toThrow("NOSCRIPT");
  });

  it("falls back from EVALSHA to EVAL on NOSCRIPT with createScript", async () => {
    const { sdk } = c;
    await sdk.scriptFlush();
    const script = sdk.createScript<number>("return redis.call('INCRBY', KEYS[1], ARGV[1])");
    expect(await script.exec([k("counter")], ["5"])).toBe(5);
    expect(await script.exec([k("counter")], ["5"])).toBe(10);
    expect(await script.evalsha([k("counter")], ["1"])).toBe(11);
    const ro = sdk.createScript<string, true>("return 'ro:' .. ARGV[1]", { readonly: true });
    expect(await ro.exec([], ["x"])).toBe("ro:x");
  });

  it("accepts the allow-key-locking shebang on EVAL, EVALSHA and SCRIPT LOAD", async () => {
    const { sdk } = c;
    const body = "#!lua flags=allow-key-locking\nreturn redis.call('INCR', KEYS[1])";
    expect(await sdk.eval(body, [k("locked")], [])).toBe(1);
    const script = sdk.createScript<number>(body);
    expect(await script.exec([k("locked")], [])).toBe(2);
    const sha = await sdk.scriptLoad(body);
    expect(await sdk.evalsha(sha, [k("locked")], [])).toBe(3);
    expect(await sdk.eval("#!lua flags=no-writes\nreturn 'nw'", [], [])).toBe("nw");
  });

  it("returns Lua errors as SDK errors", async () => {
    const { sdk } = c;
    await expect(sdk.eval("return redis.error_reply('MYERR custom')", [], [])).rejects.toThrow(
      "MYERR custom",
    );
  });
});

describe("@upstash/redis functions", () => {
  const lib = `#!lua name=compatlib
redis.register_function('setget', function(keys, args)
  redis.call('SET', keys[1], args[1])
  return redis.call('GET', keys[1])
end)
redis.register_function{function_name='echo_ro', callback=function(keys, args) return args[1] end, flags={'no-writes'}}`;

  it("loads, lists, calls and deletes a library", async () => {
    const { sdk } = c;
    await sdk.functions.flush();
    expect(await sdk.functions.load({ code: lib })).toBe("compatlib");
    await expect(sdk.functions.load({ code: lib })).rejects.toThrow("already exists");
    expect(await sdk.functions.load({ code: lib, replace: true })).toBe("compatlib");
    expect(await sdk.functions.call("setget", [k("fn")], ["v1"])).toBe("v1");
    expect(await sdk.functions.callRo("echo_ro", [], ["ro"])).toBe("ro");
    const [listed] = await sdk.functions.list({ libraryName: "compat*" });
    expect(listed?.libraryName).toBe("compatlib");
    expect(listed?.engine).toBe("LUA");
    expect(listed?.functions.map((f) => f.name).sort()).toEqual(["echo_ro", "setget"]);
    expect(listed?.functions.find((f) => f.name === "echo_ro")?.flags).toEqual(["no-writes"]);
    const stats = await sdk.functions.stats();
    expect(stats.engines["LUA"]).toEqual({ librariesCount: 1, functionsCount: 2 });
    expect(await sdk.functions.delete("compatlib")).toBe("OK");
    expect(await sdk.functions.list()).toEqual([]);
  });
});
