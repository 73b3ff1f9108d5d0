import { Ratelimit } from "@upstash/ratelimit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { startCompat, type Compat } from "./context.js";

let c: Compat;

beforeAll(async () => {
  c = await startCompat();
});
afterAll(async () => {
  await c?.stop();
});

type Limiter = ConstructorParameters<typeof Ratelimit>[0]["limiter"];

/** A limiter over the gateway; no ephemeral cache, so every call reaches Redis. */
function ratelimit(limiter: Limiter, name: string, direct = false): Ratelimit {
  return new Ratelimit({
    redis: direct ? c.direct : c.sdk,
    limiter,
    prefix: c.key(name),
    ephemeralCache: false,
    analytics: false,
  });
}

/**
 * The window of the burst tests: 2 s, not 1 s, because a burst of four SDK calls must fit in the
 * 90% of a window left after atWindowStart, and on a loaded 2-core machine four calls have taken
 * over 0.9 s (a fixed-window burst counted [true, 2], [true, 1] into the next window).
 */
const WINDOW_MS = 2000;
const WINDOW = "2 s";

/**
 * Fixed windows are aligned to multiples of their length: waits until a fresh window has just
 * begun, so that a short burst of calls cannot straddle two windows.
 */
async function atWindowStart(windowMs: number): Promise<void> {
  const into = Date.now() % windowMs;
  if (into > windowMs / 10) await new Promise((r) => setTimeout(r, windowMs - into + 5));
}

async function burst(rl: Ratelimit, id: string, n: number): Promise<[boolean, number][]> {
  const out: [boolean, number][] = [];
  for (let i = 0; i < n; i++) {
    const res = await rl.limit(id);
    await res.pending;
    out.push([res.success, res.remaining]);
  }
  return out;
}

describe("@upstash/ratelimit over the gateway", () => {
  it("fixed window: allows N, blocks, counts down, then resets", async () => {
    const rl = ratelimit(Ratelimit.fixedWindow(3, WINDOW), "fixed");
    await atWindowStart(WINDOW_MS);
    const first = await rl.limit("user");
    expect(first.limit).toBe(3);
    expect(first.reset).toBeGreaterThan(Date.now());
    expect(first.reset).toBeLessThanOrEqual(Date.now() + WINDOW_MS);
    expect([[first.success, first.remaining], ...(await burst(rl, "user", 3))]).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
    expect((await rl.getRemaining("user")).remaining).toBe(0);
    // Another identifier has its own budget.
    expect((await rl.limit("other")).success).toBe(true);
    await eventually(async () => expect((await rl.limit("user")).success).toBe(true), {
      timeoutMs: WINDOW_MS + 2000,
      intervalMs: 50,
    });
  });

  it("fixed window with auto-pipelining off, and resetUsedTokens", async () => {
    const rl = ratelimit(Ratelimit.fixedWindow(2, WINDOW), "fixed-direct", true);
    await atWindowStart(WINDOW_MS);
    expect(await burst(rl, "u", 3)).toEqual([
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
    await rl.resetUsedTokens("u");
    expect((await rl.getRemaining("u")).remaining).toBe(2);
    expect((await rl.limit("u")).success).toBe(true);
  });

  it("sliding window: allows N, blocks, then lets requests through again", async () => {
    const rl = ratelimit(Ratelimit.slidingWindow(3, WINDOW), "sliding");
    await atWindowStart(WINDOW_MS);
    expect(await burst(rl, "user", 4)).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
    expect((await rl.getRemaining("user")).remaining).toBe(0);
    // The previous window still weighs on the current one: allow up to two windows.
    await eventually(async () => expect((await rl.limit("user")).success).toBe(true), {
      timeoutMs: 2 * WINDOW_MS + 2000,
      intervalMs: 50,
    });
  });

  it("token bucket: spends the bucket, blocks, refills one token per interval", async () => {
    const rl = ratelimit(Ratelimit.tokenBucket(1, "1 s", 3), "bucket");
    expect(await burst(rl, "user", 4)).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
    const refilled = await eventually(
      async () => {
        const res = await rl.limit("user");
        expect(res.success).toBe(true);
        return res;
      },
      { timeoutMs: 3000, intervalMs: 50 },
    );
    expect(refilled.limit).toBe(3);
    expect(refilled.remaining).toBe(0);
  });

  it("blocks concurrent callers beyond the limit (auto-pipelined)", async () => {
    const rl = ratelimit(Ratelimit.tokenBucket(1, "1 m", 5), "concurrent");
    const results = await Promise.all(Array.from({ length: 8 }, () => rl.limit("shared")));
    expect(results.filter((r) => r.success)).toHaveLength(5);
    expect(results.map((r) => r.remaining).sort()).toEqual([0, 0, 0, 0, 1, 2, 3, 4]);
  });
});
