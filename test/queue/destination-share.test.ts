import { describe, expect, it } from "vitest";
import { DestinationShare } from "../../src/queue/delivery/destination-share.js";

/** When a destination at its share gets new attempts (delivery/destination-share.ts). */
describe("destination share refill", () => {
  /**
   * Fills `origin` to `n` attempts with messages left waiting for it, then gives them back one
   * by one; the counts that said go.
   */
  function refillPoints(share: DestinationShare, origin: string, n: number): number[] {
    for (let i = 0; i < n; i++) share.take(origin);
    share.leftWaiting([origin]);
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

  it("asks for no claim for a destination none of whose messages wait", () => {
    const share = new DestinationShare(200, 50, 64);
    for (let i = 0; i < 100; i++) share.take("http://a");
    share.leftWaiting(["http://b"]);
    const points: number[] = [];
    for (let left = 99; left >= 0; left--) if (share.give("http://a")) points.push(left);
    expect(points).toEqual([]);
  });

  it("sees a refill due when attempts ended during the claim that left messages waiting", () => {
    const share = new DestinationShare(200, 50, 64);
    // The claim counted 60 attempts and took 40 (to the cap of 100); 55 ended meanwhile.
    for (let i = 0; i < 45; i++) share.take("http://a");
    share.leftWaiting(["http://a"]);
    expect(share.blocked).toBe(true);
    expect(share.refillDue()).toBe(true);
    for (let i = 0; i < 10; i++) share.take("http://a");
    expect(share.refillDue()).toBe(false);
    share.leftWaiting([]);
    expect(share.blocked).toBe(false);
  });

  it("queues new messages only behind a destination whose messages wait", () => {
    const share = new DestinationShare(200, 50, 64);
    for (let i = 0; i < 60; i++) share.take("http://a");
    for (let i = 0; i < 60; i++) share.take("http://b");
    share.leftWaiting(["http://a"]);
    expect(share.crowded(["http://a"])).toBe(true);
    expect(share.crowded(["http://b"])).toBe(false);
  });

  it("counts each origin on its own", () => {
    const share = new DestinationShare(4, 50, 64);
    share.take("http://a");
    share.take("http://a");
    share.take("http://b");
    share.leftWaiting(["http://a"]);
    expect(share.fits(["http://a"])).toBe(false);
    expect(share.fits(["http://b"])).toBe(true);
    expect(share.give("http://a")).toBe(true);
    expect(share.counts()).toEqual([
      ["http://a", 1],
      ["http://b", 1],
    ]);
  });
});
