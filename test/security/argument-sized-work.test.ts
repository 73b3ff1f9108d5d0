import { describe, expect, it } from "vitest";
import { command, useGateway } from "../kv/helpers.js";

/**
 * Commands whose work the request's arguments choose rather than the data, refused by the policy
 * (commands/policy.ts) past a bound, from every token:
 * - HRANDFIELD, SRANDMEMBER and ZRANDMEMBER with a negative count repeat their picks:
 *   `SRANDMEMBER s -100000000` on a one-member set had Redis build 10^8 elements, serving no other
 *   client for 15 s and more, and HRANDFIELD on a hash with field TTLs (emulated in a script) ran
 *   past the script time limit, unkillable, until the database was restarted; all from the
 *   read-only token. A count whose elements alone pass the reply limit is refused (`pickRefusal`).
 * - SUNION, ZUNION, PFCOUNT and the like pass over every key they name, so naming one key 50,000
 *   times held Redis for seconds (`repeatRefusal`).
 */

const { stashd } = useGateway();

async function ro(argv: unknown[]): Promise<{ status: number; body: unknown }> {
  return await command(stashd(), argv, { token: stashd().kv.readonlyToken });
}

const HUGE = [
  ["HRANDFIELD", "p:h", "-100000000"],
  ["HRANDFIELD", "p:h", "-100000000", "WITHVALUES"],
  ["SRANDMEMBER", "p:s", "-100000000"],
  ["ZRANDMEMBER", "p:z", "-100000000", "WITHSCORES"],
];

describe("counted picks", () => {
  it("refuses a negative count whose elements no reply could hold, before Redis builds them", async () => {
    await command(stashd(), ["HSET", "p:h", "a", "1"]);
    await command(stashd(), ["SADD", "p:s", "a"]);
    await command(stashd(), ["ZADD", "p:z", "1", "a"]);
    for (const argv of HUGE) {
      const t = performance.now();
      const res = await ro(argv);
      expect(res.status, argv.join(" ")).toBe(400);
      expect((res.body as { error: string }).error).toMatch(
        new RegExp(`^ERR reply too large: ${argv[0]} with a count of -100000000`),
      );
      // Before: Redis's own 15 s and more (the gateway's reply deadline answered first).
      expect(performance.now() - t).toBeLessThan(2000);
    }
    expect((await command(stashd(), ["PING"])).body).toEqual({ result: "PONG" });
  });

  it("refuses them inside /pipeline and /multi-exec too, item by item", async () => {
    const body = JSON.stringify([["SRANDMEMBER", "p:s", "-100000000"], ["PING"]]);
    const res = await stashd().kvFetch("/pipeline", { body });
    const items = (await res.json()) as { result?: unknown; error?: string }[];
    expect(items[0]?.error).toMatch(/^ERR reply too large: SRANDMEMBER/);
    expect(items[1]).toEqual({ result: "PONG" });
    const tx = await stashd().kvFetch("/multi-exec", { body });
    expect(tx.status).toBe(400);
    expect(JSON.stringify(await tx.json())).toMatch(/reply too large: SRANDMEMBER/);
  });

  it("answers counts a reply can hold, negative ones repeating as Redis does", async () => {
    const picks = (await ro(["SRANDMEMBER", "p:s", "-1000"])).body as { result: string[] };
    expect(picks.result).toHaveLength(1000);
    expect(new Set(picks.result)).toEqual(new Set(["a"]));
    const pairs = (await ro(["ZRANDMEMBER", "p:z", "-500", "WITHSCORES"])).body as {
      result: string[];
    };
    expect(pairs.result).toHaveLength(1000);
    expect((await ro(["HRANDFIELD", "p:h", "5"])).body).toEqual({ result: ["a"] });
  });
});

describe("summed keys", () => {
  it("refuses naming one key over and over in a command that passes over each key named", async () => {
    const members = Array.from({ length: 2000 }, (_, i) => `m${i}`);
    await command(stashd(), ["SADD", "k:s", ...members]);
    await command(stashd(), ["ZADD", "k:z", ...members.flatMap((m, i) => [String(i), m])]);
    await command(stashd(), ["PFADD", "k:hll", ...members]);
    await command(stashd(), ["XADD", "k:x", "*", "f", "v"]);
    await command(stashd(), ["JSON.SET", "k:j", "$", '{"a":1}']);
    const n = 20_000;
    const cases = [
      ["SUNION", ...Array<string>(n).fill("k:s")],
      ["SINTERCARD", String(n), ...Array<string>(n).fill("k:s")],
      ["ZUNION", String(n), ...Array<string>(n).fill("k:z")],
      ["PFCOUNT", ...Array<string>(n).fill("k:hll")],
      ["XREAD", "STREAMS", ...Array<string>(n).fill("k:x"), ...Array<string>(n).fill("0")],
      ["JSON.MGET", ...Array<string>(n - 1).fill("k:j"), "k:j", "$.a"],
    ];
    for (const argv of cases) {
      const t = performance.now();
      const res = await ro(argv);
      expect(res.status, argv[0]).toBe(400);
      expect((res.body as { error: string }).error).toMatch(
        new RegExp(`^ERR ${argv[0]} names the same keys 19999 more times`),
      );
      // Before: 2.7 s for SUNION (6.8 s at 50,000 names), most of a second for the others.
      expect(performance.now() - t).toBeLessThan(1500);
    }
  });

  it("runs distinct keys, and a few repeats, as Redis does", async () => {
    await command(stashd(), ["SADD", "k:a", "1", "2"]);
    await command(stashd(), ["SADD", "k:b", "2", "3"]);
    const union = (await ro(["SUNION", "k:a", "k:b", "k:a"])).body as { result: string[] };
    expect([...union.result].sort()).toEqual(["1", "2", "3"]);
    const keys = Array.from({ length: 100 }, (_, i) => `k:none${i}`);
    expect((await ro(["SUNION", ...keys])).body).toEqual({ result: [] });
    // Distinct streams read from the same id: the ids repeat, the keys do not.
    const streams = Array.from({ length: 100 }, (_, i) => `k:x${i}`);
    const read = await ro(["XREAD", "STREAMS", ...streams, ...streams.map(() => "0")]);
    expect(read).toEqual({ status: 200, body: { result: null } });
    const sums = await ro(["ZUNION", "3", "k:z", "k:z", "k:z", "WITHSCORES"]);
    expect((sums.body as { result: string[] }).result.slice(0, 4)).toEqual(["m0", "0", "m1", "3"]);
  });
});

describe("offset writes", () => {
  it("refuses an offset that would extend a string past the max record size, before Redis allocates it", async () => {
    const cases = [
      ["SETBIT", "o:bits", "4294967295", "1"],
      ["SETRANGE", "o:range", "536870000", "x"],
      ["BITFIELD", "o:field", "SET", "u8", "#536870000", "1"],
      ["BITFIELD", "o:field", "GET", "u8", "0", "INCRBY", "i16", "4000000000", "1"],
    ];
    for (const argv of cases) {
      const res = await command(stashd(), argv);
      expect(res, argv.join(" ")).toEqual({
        status: 400,
        body: { error: "ERR max single record size exceeded" },
      });
    }
    // Nothing was allocated: the keys do not exist.
    expect((await command(stashd(), ["EXISTS", "o:bits", "o:range", "o:field"])).body).toEqual({
      result: 0,
    });
  });

  it("writes at offsets within it as Redis does (a bitmap of 100M ids is 12.5 MB)", async () => {
    expect((await command(stashd(), ["SETBIT", "o:ids", "100000000", "1"])).body).toEqual({
      result: 0,
    });
    expect((await command(stashd(), ["STRLEN", "o:ids"])).body).toEqual({ result: 12_500_001 });
    expect((await command(stashd(), ["SETRANGE", "o:r", "5", "ab"])).body).toEqual({ result: 7 });
    const field = await command(stashd(), [
      "BITFIELD",
      "o:f",
      "SET",
      "u8",
      "#3",
      "200",
      "GET",
      "u8",
      "#3",
    ]);
    expect(field.body).toEqual({ result: [0, 200] });
  });
});

describe("sort patterns", () => {
  const gets = (n: number, pattern: string): string[] =>
    Array.from({ length: n }).flatMap(() => ["GET", pattern]);

  it("refuses more GET patterns than the cap, before Redis looks any up", async () => {
    await command(stashd(), ["RPUSH", "so:l", ...Array.from({ length: 2000 }, (_, i) => `${i}`)]);
    for (const name of ["SORT", "SORT_RO"]) {
      const t = performance.now();
      const res = await command(stashd(), [name, "so:l", "BY", "nosort", ...gets(25_000, "w_*")]);
      expect(res.status, name).toBe(400);
      expect((res.body as { error: string }).error).toMatch(
        new RegExp(`^ERR ${name} with 25000 GET patterns: at most 64`),
      );
      // Redis held for about 10 s before; now refused without it.
      expect(performance.now() - t).toBeLessThan(2000);
    }
  });

  it("sorts with up to 64 patterns as Redis does", async () => {
    await command(stashd(), ["RPUSH", "so:s", "2", "1"]);
    await command(stashd(), ["MSET", "so:w_1", "one", "so:w_2", "two"]);
    const res = await command(stashd(), [
      "SORT",
      "so:s",
      "LIMIT",
      "0",
      "2",
      ...gets(63, "#"),
      "GET",
      "so:w_*",
    ]);
    expect(res.status).toBe(200);
    const result = (res.body as { result: (string | null)[] }).result;
    expect(result).toHaveLength(128);
    expect(result.slice(62, 66)).toEqual(["1", "one", "2", "2"]);
    expect(result[127]).toBe("two");
  });
});
