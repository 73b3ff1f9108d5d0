import { describe, expect, it } from "vitest";
import { Deadline } from "./deadline.js";
import { runToEnd } from "./scheduler.js";
import { firstSteps, sortSteps } from "./sort-steps.js";

/** The sliced sorts give exactly Array.prototype.sort's order (stable: ties keep their order). */
let seed = 9;
const rand = (n: number): number => {
  seed = (seed * 16807) % 2147483647;
  return seed % n;
};
const byValue = (a: [number, number], b: [number, number]): number => a[0] - b[0];
const total = (a: [number, number], b: [number, number]): number => a[0] - b[0] || a[1] - b[1];

describe("sortSteps and firstSteps", () => {
  it("order as Array.prototype.sort does, ties included, at every length around the runs", () => {
    for (const n of [0, 1, 2, 1023, 1024, 1025, 3000, 5000]) {
      const items = Array.from({ length: n }, (_, i): [number, number] => [rand(50), i]);
      const want = [...items].sort(byValue);
      expect(runToEnd(sortSteps([...items], byValue, new Deadline(Infinity)))).toEqual(want);
      for (const count of [0, 1, 10, n]) {
        const first = runToEnd(firstSteps(items, count, total, new Deadline(Infinity)));
        expect(first).toEqual([...items].sort(total).slice(0, count));
      }
    }
  });
});
