import { describe, expect, it } from "vitest";
import { useCompat, type Compat } from "./context.js";

/**
 * Field deadlines past Redis's hash-field cap (2^46 − 1 ms, in the year 4199) through
 * @upstash/redis: accepted and stored as the cap, as Upstash accepts them (docs/compatibility.md,
 * "Hash-field expiration"). redis-js's `use all the things` sends `Date.now() + 1000` as seconds.
 */
let c: Compat;
let k: (name: string) => string;

useCompat((ready) => {
  c = ready;
  k = ready.key;
});

const CAP_MS = 2 ** 46 - 1;

describe("hash-field deadlines past Redis's cap", () => {
  it("accepts them on every TTL command and stores the cap", async () => {
    const { sdk } = c;
    const key = k("cap");
    await sdk.hset(key, { a: 1, b: 2, c: 3, d: 4 });
    expect(await sdk.hexpireat(key, "a", Date.now() + 1000)).toEqual([1]);
    expect(await sdk.hpexpireat(key, "b", Number.MAX_SAFE_INTEGER)).toEqual([1]);
    expect(await sdk.hexpire(key, "c", 2 ** 50)).toEqual([1]);
    expect(await sdk.hpexpire(key, "d", 2 ** 53)).toEqual([1]);
    for (const f of ["a", "b", "c", "d"]) {
      expect(await sdk.hpexpiretime(key, f)).toEqual([CAP_MS]);
      expect(await sdk.hexpiretime(key, f)).toEqual([Math.floor(CAP_MS / 1000)]);
    }
    expect(await sdk.hgetall(key)).toEqual({ a: 1, b: 2, c: 3, d: 4 });
    // GT against the cap itself: not later, so not changed (Redis's reply 0).
    expect(await sdk.hexpireat(key, "a", Date.now() + 1000, "GT")).toEqual([0]);
  });

  it("answers -2 for a missing key, as the redis-js pipeline test expects of Upstash", async () => {
    const p = c.sdk.pipeline();
    p.hexpireat(k("none"), "field", Date.now() + 1000);
    expect(await p.exec()).toEqual([[-2]]);
  });

  it("accepts them in HSETEX and HGETEX; a negative or non-integer amount stays an error", async () => {
    const run = async (...args: (string | number)[]) => {
      const res = await c.stashd.kvFetch("/", { method: "POST", body: JSON.stringify(args) });
      return (await res.json()) as unknown;
    };
    const key = k("cap-ex");
    expect(await run("HSETEX", key, "EXAT", 2 ** 46 + 100, "FIELDS", 1, "a", "x")).toEqual({
      result: 1,
    });
    expect(await run("HGETEX", key, "PXAT", 2 ** 60, "FIELDS", 1, "a")).toEqual({
      result: ["x"],
    });
    expect(await run("HPEXPIRETIME", key, "FIELDS", 1, "a")).toEqual({ result: [CAP_MS] });
    expect(await run("HEXPIREAT", key, -1, "FIELDS", 1, "a")).toEqual({
      error: "ERR invalid expire time, must be >= 0",
    });
    expect(await run("HEXPIREAT", key, "99999999999999999999", "FIELDS", 1, "a")).toEqual({
      error: "ERR value is not an integer or out of range",
    });
  });
});
