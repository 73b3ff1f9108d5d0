import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registry } from "../../src/shared/metrics.js";
import { eventually } from "../harness/eventually.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { bodyOf } from "../kv/helpers.js";

/**
 * Redis checks `maxmemory` when a script starts and before its first write, never after: one
 * EVAL from the standard token that started under a managed database's max data size wrote on
 * (3 GB in the 7 s before the time limit and the grace stopped it, on this 2-core machine,
 * against a 64 MB limit), and a script building a Lua table grew the server the same way. Now
 * the server's resident memory is watched while a script call is in flight
 * (STASHD_KV_SCRIPT_MAX_GROWTH_BYTES): past the bound the script is killed, or its Redis
 * stopped and restarted without the script's writes.
 */

const MIB = 1024 * 1024;
let stashd: TestStashd;

beforeAll(async () => {
  stashd = await startStashd({
    services: ["kv"],
    kvMaxDataBytes: 8 * MIB,
    kvScriptMaxGrowthBytes: 24 * MIB,
    kvScriptMemoryCheckMs: 20,
    // Far from the memory bound's reaction, so the time limit cannot be what ended a script.
    kvScriptTimeLimitMs: 60_000,
  });
});
afterAll(async () => {
  await stashd.stop();
});

async function run(argv: unknown[]): Promise<[number, { result?: unknown; error?: string }]> {
  const res = await stashd.kvFetch("/", { body: JSON.stringify(argv) });
  return [res.status, (await bodyOf(res)) as { result?: unknown; error?: string }];
}

async function answersAgain(): Promise<void> {
  await eventually(async () => expect((await run(["PING"]))[1].result).toBe("PONG"), {
    timeoutMs: 20_000,
  });
}

describe("a script's memory on a managed database", () => {
  it("stops a script that writes on past the bound; the writes before it are kept, the script's are not", async () => {
    expect(await run(["SET", "before", "kept"])).toEqual([200, { result: "OK" }]);
    const started = Date.now();
    const [status, body] = await run([
      "EVAL",
      "local s = string.rep('x', 1048576) for i = 1, 100000 do redis.call('SET', 'fill:' .. i, s) end return 1",
      "0",
    ]);
    expect(status).toBe(503);
    expect(body.error).toMatch(
      /^ERR database restarting: a script grew its Redis past the database's memory bound/,
    );
    expect(Date.now() - started).toBeLessThan(20_000);
    await answersAgain();
    expect((await run(["GET", "before"]))[1].result).toBe("kept");
    expect((await run(["EXISTS", "fill:1"]))[1].result).toBe(0);
    expect(await registry.metrics()).toMatch(
      /^stashd_kv_script_shutdowns_total\{db="default",reason="memory"\} [1-9]/m,
    );
  });

  it("ends a script that grows its Lua heap past the bound", async () => {
    await answersAgain();
    const [status, body] = await run([
      "EVAL",
      "local t = {} for i = 1, 100000000 do t[i] = 'abcdefgh' .. i end return #t",
      "0",
    ]);
    expect(status).toBeGreaterThanOrEqual(500);
    expect(body.error).toMatch(/memory bound/);
    await answersAgain();
  });

  it("lets a script that stays within the bound run to its end", async () => {
    await answersAgain();
    const [status, body] = await run([
      "EVAL",
      "local s = string.rep('y', 1048576) for i = 1, 4 do redis.call('SET', 'small:' .. i, s) end return redis.call('STRLEN', 'small:4')",
      "0",
    ]);
    expect([status, body]).toEqual([200, { result: MIB }]);
    expect((await run(["DEL", "small:1", "small:2", "small:3", "small:4"]))[1].result).toBe(4);
  });
  it("ends a function grown past the bound when FCALL_RO runs it again as FCALL (a function not declared no-writes)", async () => {
    await answersAgain();
    const library = [
      "#!lua name=grower",
      "redis.register_function('grow', function(_, args) local t = {} for i = 1, tonumber(args[1]) do t[i] = 'abcdefgh' .. i end return #t end)",
    ].join("\n");
    expect(await run(["FUNCTION", "LOAD", "REPLACE", library])).toEqual([
      200,
      { result: "grower" },
    ]);
    // About 300 MiB of Lua strings, unwatched before the fix: it ran to its end.
    const [status, body] = await run(["FCALL_RO", "grow", "0", "4000000"]);
    expect(status).toBeGreaterThanOrEqual(400);
    expect(body.error).toMatch(/memory bound/);
    await answersAgain();
  });

  it("restarts a server that holds past one growth above the limit between calls (a function hoarding strings)", async () => {
    // A library's locals outlive its calls, and Redis counts none of it against maxmemory:
    // each call grows the server by less than the growth, so measured from what the server held
    // when it was sent, no call ever passed its bound (30 calls held 120 MiB before the fix, and on without end).
    await answersAgain();
    const library = [
      "#!lua name=hoarder",
      "local hoard = {}",
      "redis.register_function{function_name = 'hoard', flags = {'no-writes'}, callback = function(_, args) hoard[#hoard + 1] = string.rep('h', tonumber(args[1])) .. #hoard return #hoard end}",
    ].join("\n");
    expect(await run(["FUNCTION", "LOAD", "REPLACE", library])).toEqual([
      200,
      { result: "hoarder" },
    ]);
    const held: number[] = [];
    for (let i = 0; i < 30; i++) {
      const count = await eventually(
        async () => {
          const [status, body] = await run(["FCALL", "hoard", "0", String(4 * MIB)]);
          expect(status).toBe(200);
          return body.result as number;
        },
        { timeoutMs: 20_000 },
      );
      held.push(count);
    }
    // 8 MiB + 2 * 24 MiB holds about ten 4 MiB strings beside the server itself: a call sent
    // past it restarts the server, which empties the hoard (the library is kept: its AOF).
    expect(Math.max(...held)).toBeLessThanOrEqual(14);
    expect(held.at(-1)).toBeLessThan(30);
  });
});
