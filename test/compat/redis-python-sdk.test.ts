import { describe, expect, it } from "vitest";
import { useCompat, type Compat } from "./context.js";

/**
 * The upstash-redis (Python) suite's findings (issue 27), as requests shaped the way that SDK
 * sends them (upstash_redis/commands.py: a JSON array of strings and integers POSTed to `/`),
 * with what stashd answers (docs/compatibility.md, "Other emulated behaviour").
 */
let c: Compat;
let k: (name: string) => string;

useCompat((ready) => {
  c = ready;
  k = ready.key;
});

const send = async (...command: (string | number)[]): Promise<unknown> => {
  const res = await c.stashd.kvFetch("/", { method: "POST", body: JSON.stringify(command) });
  return (await res.json()) as unknown;
};
const result = async (...command: (string | number)[]): Promise<unknown> =>
  ((await send(...command)) as { result?: unknown }).result;

/** A stream with one entry, a group, and the entry delivered to consumer `c`. */
async function deliveredEntry(key: string): Promise<string> {
  const id = (await result("XADD", key, "*", "field", "value")) as string;
  await send("XGROUP", "CREATE", key, "g", "0");
  await send("XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "STREAMS", key, ">");
  return id;
}

describe("upstash-redis (Python) findings", () => {
  it("XACKDEL after XACK deletes the entry, as test_xackdel_already_acknowledged expects", async () => {
    const key = k("acked");
    const id = await deliveredEntry(key);
    expect(await result("XACK", key, "g", id)).toBe(1);
    expect(await result("XACKDEL", key, "g", "IDS", 1, id)).toEqual([1]);
    expect(await result("XLEN", key)).toBe(0);
  });

  it("XACKDEL keeps Redis's -1 for an entry the group has not delivered, and for none", async () => {
    const key = k("undelivered");
    await deliveredEntry(key);
    const later = (await result("XADD", key, "*", "field", "later")) as string;
    expect(await result("XACKDEL", key, "g", "IDS", 2, later, "1-1")).toEqual([-1, -1]);
    expect(await result("XLEN", key)).toBe(2);
    // ACKED: an acknowledged entry another group still has to deliver stays (2).
    const two = k("two-groups");
    const id = await deliveredEntry(two);
    await send("XGROUP", "CREATE", two, "g2", "0");
    await send("XACK", two, "g", id);
    expect(await result("XACKDEL", two, "g", "ACKED", "IDS", 1, id)).toEqual([2]);
    expect(await result("XLEN", two)).toBe(1);
  });

  it("XINFO CONSUMERS of a missing group keeps Redis's NOGROUP error", async () => {
    const key = k("xinfo");
    await send("XADD", key, "*", "field", "value");
    const reply = (await send("XINFO", "CONSUMERS", key, "nonexistent_group")) as {
      error?: string;
    };
    expect(reply.error).toMatch(/^NOGROUP /);
  });

  it("ZRANGESTORE with LIMIT and no BYSCORE/BYLEX keeps Redis's error", async () => {
    await send("ZADD", k("z"), 1, "member1", 2, "member2", 3, "member3", 4, "member4");
    const reply = (await send("ZRANGESTORE", k("dst"), k("z"), 0, 2, "LIMIT", 1, 1)) as {
      error?: string;
    };
    expect(reply.error).toMatch(/LIMIT/);
    expect(await result("ZRANGESTORE", k("dst"), k("z"), 0, 2, "BYSCORE", "LIMIT", 1, 1)).toBe(1);
    expect(await result("ZRANGE", k("dst"), 0, -1, "WITHSCORES")).toEqual(["member2", "2"]);
  });

  it("HEXPIRE 5 then HEXPIRETIME is at most now + 5 (floored seconds)", async () => {
    await send("HSET", k("h"), "f", "v");
    const before = Math.floor(Date.now() / 1000);
    expect(await result("HEXPIRE", k("h"), 5, "FIELDS", 1, "f")).toEqual([1]);
    const [at] = (await result("HEXPIRETIME", k("h"), "FIELDS", 1, "f")) as number[];
    expect(at).toBeGreaterThanOrEqual(before + 5);
    expect(at).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 5);
  });

  it("SCAN loops as the SDK's docstring shows visit every key once", async () => {
    const names = Array.from({ length: 40 }, (_, i) => k(`scan:${i}`));
    for (const name of names) await send("SET", name, "v");
    const seen: string[] = [];
    let cursor = "0";
    do {
      const [next, keys] = (await result("SCAN", cursor, "MATCH", k("scan:*"))) as [
        string,
        string[],
      ];
      seen.push(...keys);
      cursor = next;
    } while (cursor !== "0");
    expect(seen.sort()).toEqual(names.sort());
  });
});
