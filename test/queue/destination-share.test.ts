import { describe, expect, it } from "vitest";
import { DestinationShare } from "../../src/queue/delivery/destination-share.js";

/** When a destination at its share gets new attempts (delivery/destination-share.ts). */
describe("destination share refill", () => {
  /** Fills `origin` to `n` attempts, then gives them back one by one; the counts that said go. */
  function refillPoints(share: DestinationShare, origin: string, n: number): number[] {
    for (let i = 0; i < n; i++) share.take(origin);
    const points: number[] = [];
    for (let left = n - 1; left >= 0; left--) if (share.give(origin)) points.push(left);
    return points;
  }

  it("refills a capped destination once half its share (at most a batch) is free", () => {
    // 200 slots, 50 %: cap 100; refilled at 50 (half), not at every freed slot.
    expect(refillPoints(new DestinationShare(200, 50, 64), "http://a", 100)).toEqual([50]);
    // cap 200, half is 100 but at most a batch of 64 waits: refilled at 136.
    expect(refillPoints(new DestinationShare(200, 100, 64), "http://a", 200)).toEqual([136]);
  });

  it("refills a destination with a cap of one or two as soon as one attempt ends", () => {
    expect(refillPoints(new DestinationShare(2, 50, 64), "http://a", 1)).toEqual([0]);
    expect(refillPoints(new DestinationShare(4, 50, 64), "http://a", 2)).toEqual([1]);
  });

  it("counts each origin on its own", () => {
    const share = new DestinationShare(4, 50, 64);
    share.take("http://a");
    share.take("http://a");
    share.take("http://b");
    expect(share.fits(["http://a"])).toBe(false);
    expect(share.fits(["http://b"])).toBe(true);
    expect(share.give("http://a")).toBe(true);
    expect(share.counts()).toEqual([
      ["http://a", 1],
      ["http://b", 1],
    ]);
  });
});
