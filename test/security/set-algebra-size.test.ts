import { describe, expect, it } from "vitest";
import { command, useGateway } from "../kv/helpers.js";

/**
 * Set and sorted-set algebra passes over its keys' elements inside one command, serving no other
 * client meanwhile: SUNION of two million-member sets held Redis 2-4 s, from the read-only token
 * (2026-11-28). Past STASHD_KV_MAX_COMBINED_ELEMENTS, estimated from the keys' sizes before it
 * is sent, such a command is refused (commands/combined-size.ts). Here the limit is 1,000.
 */
const { stashd } = useGateway({ kvMaxCombinedElements: 1_000 });

const ro = (argv: unknown[]) => command(stashd(), argv, { token: stashd().kv.readonlyToken });
const members = (from: number, n: number) => Array.from({ length: n }, (_, i) => String(from + i));

async function fill(): Promise<void> {
  const writes = [
    ["SADD", "a:s600", ...members(0, 600)],
    ["SADD", "a:t600", ...members(300, 600)],
    ["SADD", "a:s10", ...members(0, 10)],
    ["ZADD", "a:z600", ...members(0, 600).flatMap((m) => [m, m])],
  ];
  for (const argv of writes) expect((await command(stashd(), argv)).status).toBe(200);
}

const tooMany = (name: string, work: number) =>
  new RegExp(
    `^ERR too many elements: ${name} would pass over ${work} elements .* 1000 one command`,
  );

describe("set algebra past the element limit", () => {
  it("is refused from every token, by the sizes of its keys, before Redis runs it", async () => {
    await fill();
    const refused: [unknown[], string, number][] = [
      [["SUNION", "a:s600", "a:t600"], "SUNION", 1200],
      [["SDIFF", "a:s600", "a:t600"], "SDIFF", 1200],
      [["SINTER", "a:s600", "a:t600"], "SINTER", 1200],
      [["SINTERCARD", "2", "a:s600", "a:t600"], "SINTERCARD", 1200],
      // ZUNION takes sets as well: the set's size counts.
      [["ZUNION", "2", "a:z600", "a:s600"], "ZUNION", 1200],
      [["ZINTERCARD", "2", "a:z600", "a:t600"], "ZINTERCARD", 1200],
    ];
    for (const [argv, name, work] of refused) {
      for (const res of [await ro(argv), await command(stashd(), argv)]) {
        expect(res.status, String(argv)).toBe(400);
        expect((res.body as { error: string }).error).toMatch(tooMany(name, work));
      }
    }
    const stored = await command(stashd(), ["SUNIONSTORE", "a:dest", "a:s600", "a:t600"]);
    expect((stored.body as { error: string }).error).toMatch(tooMany("SUNIONSTORE", 1200));
    expect((await command(stashd(), ["EXISTS", "a:dest"])).body).toEqual({ result: 0 });
  });

  it("runs within it: an intersection is its smallest key times the keys, a missing key 0", async () => {
    expect((await ro(["SINTERCARD", "2", "a:s600", "a:s10"])).body).toEqual({ result: 10 });
    expect((await ro(["SUNION", "a:s600", "a:missing"])).status).toBe(200);
    const union = await ro(["ZUNION", "2", "a:z600", "a:s10"]);
    expect((union.body as { result: string[] }).result).toHaveLength(600);
    // A key of another type: Redis's own answer.
    await command(stashd(), ["SET", "a:str", "x"]);
    expect((await ro(["SUNION", "a:str", "a:s10"])).body).toEqual({
      error: expect.stringMatching(/^WRONGTYPE/) as unknown,
    });
  });

  it("is refused as its item in /pipeline, and discards a /multi-exec", async () => {
    const body = JSON.stringify([
      ["SUNION", "a:s600", "a:t600"],
      ["SCARD", "a:s10"],
    ]);
    const items = (await (await stashd().kvFetch("/pipeline", { body })).json()) as unknown[];
    expect(items[0]).toEqual({ error: expect.stringMatching(tooMany("SUNION", 1200)) as unknown });
    expect(items[1]).toEqual({ result: 10 });
    const tx = await stashd().kvFetch("/multi-exec", { body });
    expect(tx.status).toBe(400);
    const error = ((await tx.json()) as { error: string }).error;
    expect(error).toMatch(tooMany("SUNION", 1200));
    expect(error).toMatch(/Transaction discarded/);
  });
});
