import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRedis, testPool } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { bodyOf, infoNumber, statusAndBody } from "../kv/helpers.js";

/**
 * Redis checks `maxmemory` only before a command runs, so one command whose result copies data
 * already stored grew a managed database past its max data size by that result: COPY of a key as
 * large as the room left doubled it (64 MiB database: 45 MiB used, 88 MiB after one COPY), and
 * `SORT list BY nosort GET big* STORE dest`, a 100-element list of empty strings and one 1 MB
 * string, stored that string once per element (107 MB from a 2 MB database; the element count
 * multiplies it). Now those commands run in copy-guard.lua on a managed database, which refuses
 * one whose result does not fit, atomically, so no command of the same request can grow a source
 * between the check and the copy.
 */

const MIB = 1024 * 1024;
const MAX = 16 * MIB;
let stashd: TestStashd;

beforeAll(async () => {
  stashd = await startStashd({ services: ["kv"], kvMaxDataBytes: MAX });
});
afterAll(async () => {
  await stashd.stop();
});

type Body = { result?: unknown; error?: string };

const run = (argv: unknown[], token?: string | null): Promise<[number, Body]> =>
  statusAndBody(stashd, argv, token);

const usedMemory = (): Promise<number> => infoNumber(stashd, "memory", "used_memory");

/** A set of about `mib` MiB, made by a script (one request). */
async function bigSet(key: string, mib: number): Promise<void> {
  const members = Math.floor((mib * MIB) / 110);
  const script = `for i = 1, ${members}, 1000 do local t = {} for j = i, math.min(i + 999, ${members}) do t[#t + 1] = j .. '${"m".repeat(40)}' end redis.call('SADD', KEYS[1], unpack(t)) end return redis.call('SCARD', KEYS[1])`;
  const [status] = await run(["EVAL", script, "1", key]);
  expect(status).toBe(200);
}

function expectCopyRefusal([status, body]: [number, Body], name: string): void {
  expect(status).toBe(507);
  expect(body.error).toMatch(/^ERR DB capacity quota exceeded: .*\(Redis: OOM command not allowed/);
  expect(body.error).toContain(`stashd: ${name} would store about`);
}

describe("commands whose result copies stored data, on a managed database", () => {
  it("refuses COPY, SUNIONSTORE and ZUNIONSTORE of a key larger than the room left; the database stays below its max data size", async () => {
    await bigSet("s", 9);
    const before = await usedMemory();
    expect(before).toBeLessThan(MAX);
    expectCopyRefusal(await run(["COPY", "s", "s2"]), "COPY");
    expectCopyRefusal(await run(["SUNIONSTORE", "u", "s"]), "SUNIONSTORE");
    expectCopyRefusal(await run(["SINTERSTORE", "u", "s", "s"]), "SINTERSTORE");
    expectCopyRefusal(await run(["ZUNIONSTORE", "z", "1", "s"]), "ZUNIONSTORE");
    expectCopyRefusal(await run(["SORT", "s", "BY", "nosort", "STORE", "l"]), "SORT");
    expect(await run(["EXISTS", "s2", "u", "z", "l"])).toEqual([200, { result: 0 }]);
    expect(await usedMemory()).toBeLessThan(MAX);
    // A source that fits is copied as before, and a difference stores at most its first key.
    expect(await run(["SADD", "small", "a", "b"])).toEqual([200, { result: 2 }]);
    expect(await run(["COPY", "small", "small2"])).toEqual([200, { result: 1 }]);
    expect(await run(["SDIFFSTORE", "d", "small", "s"])).toEqual([200, { result: 2 }]);
    expect(await run(["SINTERSTORE", "i", "small", "s"])).toEqual([200, { result: 0 }]);
  });

  it("checks each command when it runs: a pipeline or transaction that grows the source first is refused at the copy", async () => {
    expect((await run(["FLUSHDB"]))[0]).toBe(200);
    const value = "v".repeat(MIB);
    const grow = Array.from({ length: 9 }, () => ["APPEND", "src", value]);
    const res = await stashd.kvFetch("/pipeline", {
      body: JSON.stringify([...grow, ["COPY", "src", "dst"], ["COPY", "src", "dst2"]]),
    });
    const replies = (await res.json()) as Body[];
    expect(replies[8]).toEqual({ result: 9 * MIB });
    expect(replies[9]?.error).toMatch(/stashd: COPY would store about/);
    expect(replies[10]?.error).toMatch(/stashd: COPY would store about/);
    expect(await usedMemory()).toBeLessThan(MAX);

    const multi = await stashd.kvFetch("/multi-exec", {
      body: JSON.stringify([
        ["SET", "t", "x"],
        ["COPY", "src", "dst3"],
      ]),
    });
    const items = (await multi.json()) as Body[];
    expect(items[0]).toEqual({ result: "OK" });
    expect(items[1]?.error).toMatch(/stashd: COPY would store about/);
    expect(await run(["EXISTS", "dst", "dst2", "dst3"])).toEqual([200, { result: 0 }]);
  });

  it("measures SORT … GET … STORE by the values its patterns read, not by its source", async () => {
    expect((await run(["FLUSHDB"]))[0]).toBe(200);
    expect((await run(["SET", "big", "b".repeat(MIB)]))[0]).toBe(200);
    const empties = Array.from({ length: 100 }, () => "");
    expect(await run(["RPUSH", "l", ...empties])).toEqual([200, { result: 100 }]);
    // 100 copies of 1 MiB: 100 MiB from a 1 MiB database, before.
    expectCopyRefusal(
      await run(["SORT", "l", "BY", "nosort", "GET", "big*", "STORE", "out"]),
      "SORT",
    );
    expect(await usedMemory()).toBeLessThan(MAX);
    // Within the room left it stores as before.
    expect(
      await run(["SORT", "l", "BY", "nosort", "LIMIT", "0", "3", "GET", "big*", "STORE", "out"]),
    ).toEqual([200, { result: 3 }]);
    expect(await run(["LLEN", "out"])).toEqual([200, { result: 3 }]);
  });

  it("answers the other copying commands as Redis does when they fit", async () => {
    expect((await run(["FLUSHDB"]))[0]).toBe(200);
    expect((await run(["ZADD", "z1", "1", "a", "2", "b"]))[0]).toBe(200);
    expect((await run(["ZADD", "z2", "3", "b", "4", "c"]))[0]).toBe(200);
    expect(await run(["ZINTERSTORE", "zi", "2", "z1", "z2", "WEIGHTS", "1", "2"])).toEqual([
      200,
      { result: 1 },
    ]);
    expect(await run(["ZSCORE", "zi", "b"])).toEqual([200, { result: "8" }]);
    expect(await run(["ZRANGESTORE", "zr", "z1", "0", "-1"])).toEqual([200, { result: 2 }]);
    expect(await run(["ZDIFFSTORE", "zd", "2", "z1", "z2"])).toEqual([200, { result: 1 }]);
    expect(await run(["SET", "b1", "ab"])).toEqual([200, { result: "OK" }]);
    expect(await run(["BITOP", "NOT", "bn", "b1"])).toEqual([200, { result: 2 }]);
    expect((await run(["GEOADD", "g", "13.361389", "38.115556", "Palermo"]))[0]).toBe(200);
    expect(
      await run(["GEOSEARCHSTORE", "gs", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"]),
    ).toEqual([200, { result: 1 }]);
    expect(await run(["GEORADIUS", "g", "15", "37", "200", "km", "STORE", "gr"])).toEqual([
      200,
      { result: 1 },
    ]);
    // Redis's own errors come through unchanged.
    const [status, body] = await run(["SUNIONSTORE", "u", "b1"]);
    expect(status).toBe(400);
    expect(body.error).toMatch(/^WRONGTYPE/);
    expect(await run(["COPY", "missing", "x"])).toEqual([200, { result: 0 }]);
  });

  it("runs RESTORE in the guard: a payload that fits is restored as Redis restores it", async () => {
    const bare = await startRedis();
    const other = testPool(bare.url, 1);
    try {
      await other.exec(["RPUSH", "l", "a", "b", "c"]);
      const dump = await other.exec(["DUMP", "l"]);
      if (dump.kind !== "bulk") throw new Error("no dump");
      const bytes = [...dump.value].map((b) => `%${b.toString(16).padStart(2, "0")}`).join("");
      const res = await stashd.kvFetch(`/restore/restored/0/${bytes}`, { method: "POST" });
      expect(await bodyOf(res)).toEqual({ result: "OK" });
      expect(await run(["LRANGE", "restored", "0", "-1"])).toEqual([
        200,
        { result: ["a", "b", "c"] },
      ]);
      const again = await stashd.kvFetch(`/restore/restored/0/${bytes}`, { method: "POST" });
      expect(((await bodyOf(again)) as Body).error).toMatch(/^BUSYKEY/);
    } finally {
      await other.close();
      await bare.stop();
    }
  });

  it("holds for every token: none is refused, the read-only token's refusal names the command", async () => {
    expect((await run(["COPY", "z1", "zz"], null))[0]).toBe(401);
    const [status, body] = await run(["COPY", "z1", "zz"], stashd.kv.readonlyToken);
    expect(status).toBe(400);
    expect(body.error).toMatch(/^NOPERM .*'copy'/);
    const sort = await run(["SORT", "z1", "STORE", "zz"], stashd.kv.readonlyToken);
    expect(sort[1].error).toMatch(/^NOPERM .*'sort'/);
    expect(await run(["EXISTS", "zz"])).toEqual([200, { result: 0 }]);
  });

  it("holds for a token-made ACL user: one denied the script, INFO or MEMORY cannot copy unchecked", async () => {
    // (Under the field-TTL emulation COPY runs in the hash script, which needs more than +copy.)
    await bigSet("acl:s", 9);
    const mint = async (user: string, rules: string[]): Promise<string> => {
      expect(await run(["ACL", "SETUSER", user, "on", ">pw", "~*", ...rules])).toEqual([
        200,
        { result: "OK" },
      ]);
      const [, minted] = await run(["ACL", "RESTTOKEN", user, "pw"]);
      return minted.result as string;
    };
    const scripted = await mint("copier", ["+@all"]);
    expectCopyRefusal(await run(["COPY", "acl:s", "acl:d"], scripted), "COPY");
    const small = await run(["SADD", "acl:small", "a"], scripted);
    expect(small).toEqual([200, { result: 1 }]);
    expect(await run(["COPY", "acl:small", "acl:small2"], scripted)).toEqual([200, { result: 1 }]);
    for (const rules of [["+copy"], ["+copy", "+evalsha", "+eval"]]) {
      const token = await mint(`bare${rules.length}`, rules);
      const [status, body] = await run(["COPY", "acl:small", "acl:other"], token);
      expect(status).toBeGreaterThanOrEqual(400);
      expect(body.error).toMatch(/^NOPERM|can't run this command/);
    }
    expect(await run(["EXISTS", "acl:d", "acl:other"])).toEqual([200, { result: 0 }]);
  });
});

describe("with the field-TTL emulation off (STASHD_KV_EMULATE_FIELD_TTL=false)", () => {
  it("runs COPY in the copy guard (not the hash script), and refuses one that does not fit", async () => {
    const plain = await startStashd({
      services: ["kv"],
      kvMaxDataBytes: MAX,
      kvEmulateFieldTtl: false,
    });
    try {
      const at = (argv: unknown[]): Promise<[number, Body]> => statusAndBody(plain, argv);
      // Made in a script: a 9 MiB argument's query buffer alone would count against the limit.
      const make = `return redis.call('SET', KEYS[1], string.rep('b', ${9 * MIB}))`;
      expect(await at(["EVAL", make, "1", "big"])).toEqual([200, { result: "OK" }]);
      expectCopyRefusal(await at(["COPY", "big", "big2"]), "COPY");
      expect(await at(["SET", "small", "s"])).toEqual([200, { result: "OK" }]);
      expect(await at(["COPY", "small", "small2"])).toEqual([200, { result: 1 }]);
      expect(await at(["COPY", "small", "small2"])).toEqual([200, { result: 0 }]);
      expect(await at(["COPY", "small", "small2", "REPLACE"])).toEqual([200, { result: 1 }]);
      const stats = String((await at(["INFO", "commandstats"]))[1].result);
      expect(stats).toMatch(/^cmdstat_evalsha:calls=[1-9]/m);
    } finally {
      await plain.stop();
    }
  });
});
