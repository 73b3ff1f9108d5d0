import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { infoNumber, statusAndBody } from "../kv/helpers.js";

/**
 * Redis keeps the body of every distinct script EVAL was sent, never evicts one (7.0), and
 * refuses no EVAL at `maxmemory`, while the cache counts against it: a loop of EVALs with unique
 * 200 KB comments held 175 MiB of scripts in a 64 MiB database, whose writes were then all
 * refused, and went on without end. Now a managed database's script cache is emptied (SCRIPT
 * FLUSH ASYNC) past an eighth of its max data size; a client's EVALSHA gets NOSCRIPT once and
 * the SDK sends the script again.
 */

const MIB = 1024 * 1024;
const MAX = 16 * MIB; // the cache's bound: 2 MiB
let stashd: TestStashd;

beforeAll(async () => {
  stashd = await startStashd({ services: ["kv"], kvMaxDataBytes: MAX, kvReadonlyScripts: true });
});
afterAll(async () => {
  await stashd.stop();
});

type Body = { result?: unknown; error?: string };

const run = (argv: unknown[], token?: string | null): Promise<[number, Body]> =>
  statusAndBody(stashd, argv, token);

const cachedScriptBytes = (): Promise<number> =>
  infoNumber(stashd, "memory", "used_memory_scripts_eval");

/** 100 EVALs (or EVAL_ROs) of distinct 200 KB bodies: 20 MB of scripts, past the 16 MiB limit. */
async function distinctEvals(name: string, token: string, tag: string): Promise<void> {
  const pad = `-- ${"c".repeat(200_000)}\n`;
  for (let i = 0; i < 100; i++) {
    expect(await run([name, `${pad}return '${tag}${i}'`, "0"], token)).toEqual([
      200,
      { result: `${tag}${i}` },
    ]);
  }
}

describe("a managed database's script cache", () => {
  it("stays bounded under distinct EVAL bodies from each token, writes go on, and the SDK's EVALSHA falls back once", async () => {
    const sdk = new Redis({ url: stashd.kv.url, token: stashd.kv.token });
    const script = sdk.createScript<string>("return ARGV[1] .. KEYS[1]");
    expect(await script.exec(["k"], ["v"])).toBe("vk");

    expect((await run(["EVAL", "return 1", "0"], null))[0]).toBe(401);
    for (const [name, token, tag] of [
      ["EVAL", stashd.kv.token, "s"],
      ["EVAL_RO", stashd.kv.readonlyToken, "r"],
    ] as const) {
      await distinctEvals(name, token, tag);
      await eventually(async () => expect(await cachedScriptBytes()).toBeLessThan(3 * MIB));
      expect(await run(["SET", `after-${tag}`, "x".repeat(1024)])).toEqual([200, { result: "OK" }]);
    }
    // The script was flushed with the others: EVALSHA answers NOSCRIPT, the SDK sends EVAL.
    expect(await script.exec(["k2"], ["w"])).toBe("wk2");
    expect(await script.exec(["k3"], ["x"])).toBe("xk3");
  });
});
