import { describe, expect, it } from "vitest";
import { editDistance } from "./terms.js";

/**
 * editDistance's shortcuts (typed scratch rows, a bound `max` that truncates prefixes and stops
 * early) against the plain dynamic programme, on random words: the same distance without a
 * bound, and the same "within max" answer with one.
 */
function reference(a: string, b: string, transpositions: boolean, prefixOfB: boolean): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i] as number[];
      const up = d[i - 1] as number[];
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(
        (up[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (up[j - 1] as number) + cost,
      );
      if (transpositions && i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1);
      }
    }
  }
  const last = d[a.length] as number[];
  return prefixOfB ? Math.min(...last) : (last[b.length] as number);
}

let seed = 3;
const rand = (n: number): number => {
  seed = (seed * 16807) % 2147483647;
  return seed % n;
};
const word = (): string => Array.from({ length: rand(9) }, () => "abc"[rand(3)]).join("");

describe("editDistance", () => {
  it("agrees with the plain dynamic programme, with and without a bound", () => {
    for (let n = 0; n < 5_000; n++) {
      const [a, b] = [word(), word()];
      for (const transpositions of [false, true]) {
        for (const prefix of [false, true]) {
          const want = reference(a, b, transpositions, prefix);
          expect(editDistance(a, b, transpositions, prefix)).toBe(want);
          for (const max of [0, 1, 2]) {
            const within = editDistance(a, b, transpositions, prefix, max) <= max;
            expect(within, `${a} ${b} ${transpositions} ${prefix} ${max}`).toBe(want <= max);
          }
        }
      }
    }
  });
});
