import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { startCompat, type Compat } from "./context.js";

let c: Compat;
let k: (name: string) => string;
let ro: Redis;
let roDirect: Redis;

beforeAll(async () => {
  // Scripts for the read-only token are an opt-in (STASHD_KV_READONLY_SCRIPTS); this file runs
  // the SDK's read-only scripts with it on. Off by default: test/security/kv-rights.test.ts.
  c = await startCompat({ kvReadonlyScripts: true });
  k = c.key;
  const { url, readonlyToken } = c.stashd.kv;
  ro = new Redis({ url, token: readonlyToken });
  roDirect = new Redis({ url, token: readonlyToken, enableAutoPipelining: false });
  await c.sdk.set(k("str"), "value");
  await c.sdk.hset(k("hash"), { f: "v" });
  await c.sdk.zadd(k("z"), { score: 1, member: "m" });
  await c.sdk.xadd(k("stream"), "1-1", { a: 1 });
});
afterAll(async () => {
  await c?.stop();
});

describe("@upstash/redis with the read-only token", () => {
  it("reads", async () => {
    expect(await ro.get(k("str"))).toBe("value");
    expect(await ro.mget(k("str"), k("none"))).toEqual(["value", null]);
    expect(await ro.hgetall(k("hash"))).toEqual({ f: "v" });
    expect(await ro.zscore(k("z"), "m")).toBe(1);
    expect(await ro.xrange(k("stream"), "-", "+")).toEqual({ "1-1": { a: 1 } });
    expect(await ro.exists(k("str"), k("hash"))).toBe(2);
    expect(await ro.ttl(k("str"))).toBe(-1);
    expect(await roDirect.strlen(k("str"))).toBe(5);
    expect(await roDirect.ping()).toBe("PONG");
    expect(await ro.pipeline().get(k("str")).hget(k("hash"), "f").exec()).toEqual(["value", "v"]);
  });

  it("runs read-only scripts and functions", async () => {
    expect(await roDirect.evalRo("return redis.call('GET', KEYS[1])", [k("str")], [])).toBe(
      "value",
    );
    // EVALSHA_RO, NOSCRIPT, then EVAL_RO: the SDK's fallback works within the read-only rights.
    const script = ro.createScript<string, true>("return 'ro:' .. ARGV[1]", { readonly: true });
    expect(await script.exec([], ["a"])).toBe("ro:a");
    expect(await script.exec([], ["b"])).toBe("ro:b");
    const lib = `#!lua name=rolib
redis.register_function{function_name='ro_get', callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}}`;
    await c.sdk.functions.load({ code: lib, replace: true });
    expect(await ro.functions.callRo("ro_get", [k("str")])).toBe("value");
    await expect(roDirect.functions.call("ro_get", [k("str")])).rejects.toThrow(
      /^NOPERM .*'fcall'/,
    );
  });

  it("subscribes over SSE", async () => {
    const sub = ro.subscribe<string>(k("ro-chan"));
    const got: string[] = [];
    sub.on("message", (m) => got.push(m.message));
    await eventually(async () =>
      expect(await c.sdk.exec(["PUBSUB", "NUMSUB", k("ro-chan")])).toEqual([k("ro-chan"), 1]),
    );
    await c.sdk.publish(k("ro-chan"), "to readers");
    await eventually(() => expect(got).toEqual(["to readers"]));
    await sub.unsubscribe();
  });

  it("refuses writes with NOPERM, single, auto-pipelined and pipelined", async () => {
    await expect(roDirect.set(k("str"), "changed")).rejects.toThrow(
      "NOPERM this user has no permissions to run the 'set' command",
    );
    await expect(ro.incr(k("n"))).rejects.toThrow(
      "Command failed: NOPERM this user has no permissions to run the 'incr' command",
    );
    await expect(
      roDirect.geoadd(k("g"), { longitude: 1, latitude: 2, member: "x" }),
    ).rejects.toThrow(/^NOPERM .*'geoadd'/);
    await expect(roDirect.del(k("str"))).rejects.toThrow(/^NOPERM .*'del'/);
    const res = await ro.pipeline().get(k("str")).set(k("str"), "x").exec({ keepErrors: true });
    expect(res[0]).toEqual({ error: undefined, result: "value" });
    expect(res[1]?.error).toMatch(/^NOPERM .*'set'/);
    await expect(roDirect.eval("return 1", [], [])).rejects.toThrow(/^NOPERM/);
    await expect(roDirect.publish(k("chan"), "msg")).rejects.toThrow(/^NOPERM/);
    expect(await c.sdk.get(k("str"))).toBe("value");
    expect(await c.sdk.exists(k("n"), k("g"))).toBe(0);
  });

  it("refuses the heavy reads SCAN and KEYS", async () => {
    await expect(roDirect.keys("*")).rejects.toThrow(/^NOPERM .*'keys'/);
    await expect(roDirect.scan(0)).rejects.toThrow(/^NOPERM .*'scan'/);
  });
});
