import { RE2JS } from "re2js";
import type { TextColumn } from "./memory-index.js";
import { SearchError } from "./errors.js";
import type { Deadline } from "./deadline.js";
import type { Steps } from "./scheduler.js";

/**
 * Expansions of one query term into the dictionary's terms: fuzzy (MiniSearch's radix-tree
 * `fuzzyGet`, then the optimal-string-alignment distance so a transposition may count as one
 * edit), fuzzy prefix and regular expressions (RE2JS: linear time, so no pattern can backtrack
 * for ever) by a scan of the dictionary that checks the query's deadline and yields its turn
 * (generators: see filter.ts). MiniSearch's `fuzzyGet` is one call that cannot yield: it stays
 * for plain fuzzy terms (2-18 ms on 120 000 terms, docs/decisions.md).
 */
export const MAX_FUZZY_DISTANCE = 2;
export const MAX_REGEX_LENGTH = 1000;

export interface FuzzyOptions {
  readonly distance: number;
  readonly transpositionCostOne: boolean;
  readonly prefix: boolean;
}

/** Dictionary terms within the distance of `term` (or starting with such a term, `prefix`). */
export function* fuzzyTerms(
  column: TextColumn,
  term: string,
  opts: FuzzyOptions,
  deadline: Deadline,
): Steps<string[]> {
  if (opts.distance < 0 || opts.distance > MAX_FUZZY_DISTANCE || !Number.isInteger(opts.distance)) {
    throw new SearchError(`ERR $fuzzy distance must be 0, 1 or 2`);
  }
  if (opts.prefix) return yield* fuzzyPrefixTerms(column, term, opts, deadline);
  // Levenshtein counts a transposition as two edits: ask the radix tree for one more.
  const wide = opts.transpositionCostOne ? opts.distance + 1 : opts.distance;
  const found: string[] = [];
  for (const candidate of column.dictionary.fuzzyGet(term, wide).keys()) {
    if (deadline.tick()) yield;
    if (editDistance(term, candidate, opts.transpositionCostOne, false) <= opts.distance) {
      found.push(candidate);
    }
  }
  return found;
}

function* fuzzyPrefixTerms(
  column: TextColumn,
  term: string,
  opts: FuzzyOptions,
  deadline: Deadline,
): Steps<string[]> {
  if (opts.distance === 0) return [...column.dictionary.atPrefix(term).keys()];
  const found: string[] = [];
  for (const candidate of column.postings.keys()) {
    if (deadline.tick()) yield;
    if (
      editDistance(term, candidate, opts.transpositionCostOne, true, opts.distance) <= opts.distance
    ) {
      found.push(candidate);
    }
  }
  return found;
}

/** Terms that start with `prefix`. */
export function prefixTerms(column: TextColumn, prefix: string): string[] {
  return [...column.dictionary.atPrefix(prefix).keys()];
}

/** Dictionary terms the pattern matches whole, letter case ignored (terms are lower-case). */
export function* regexTerms(
  column: TextColumn,
  pattern: string,
  deadline: Deadline,
): Steps<string[]> {
  if (pattern.length > MAX_REGEX_LENGTH) {
    throw new SearchError(`ERR $regex pattern longer than ${MAX_REGEX_LENGTH} characters`);
  }
  let re: RE2JS;
  try {
    re = RE2JS.compile(pattern, RE2JS.CASE_INSENSITIVE);
  } catch (err) {
    throw new SearchError(`ERR invalid $regex pattern: ${(err as Error).message}`);
  }
  const found: string[] = [];
  for (const term of column.postings.keys()) {
    if (deadline.tick()) yield;
    if (re.matches(term)) found.push(term);
  }
  return found;
}

/**
 * Edit distance between `a` and `b` (insertions, deletions, substitutions, and adjacent
 * transpositions as one edit when `transpositions`); with `prefixOfB`, the least distance
 * between `a` and any prefix of `b`. With `max`, any answer above `max` may be returned for a
 * distance above it (callers compare with `max`): a prefix of `b` longer than `a.length + max`
 * is not looked at (it is further than `max` from `a`), and the computation stops at the first
 * row whose every cell exceeds `max` (a row's least cell never decreases from one row to the
 * next, transpositions included). Measured: the smart query of docs/decisions.md, 6 words over
 * 100 000 documents, ~3 times faster.
 */
export function editDistance(
  a: string,
  b: string,
  transpositions: boolean,
  prefixOfB: boolean,
  max = Infinity,
): number {
  const m = a.length;
  if (prefixOfB && b.length > m + max) b = b.slice(0, m + max);
  const n = b.length;
  // Three rows of scratch, reused: the row before last, the last, and the one being filled.
  if (n + 1 > (scratch[0] as Int32Array).length)
    scratch = [0, 1, 2].map(() => new Int32Array(2 * (n + 1)));
  let [prev2, prev, row] = scratch as [Int32Array, Int32Array, Int32Array];
  for (let j = 0; j <= n; j++) prev[j] = j;
  for (let i = 1; i <= m; i++) {
    row[0] = i;
    let least = i;
    for (let j = 1; j <= n; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(
        (prev[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (prev[j - 1] as number) + cost,
      );
      if (transpositions && i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d = Math.min(d, (prev2[j - 2] as number) + 1);
      }
      row[j] = d;
      if (d < least) least = d;
    }
    if (least > max) return max + 1;
    [prev2, prev, row] = [prev, row, prev2];
  }
  if (!prefixOfB) return prev[n] as number;
  let least = prev[0] as number;
  for (let j = 1; j <= n; j++) least = Math.min(least, prev[j] as number);
  return least;
}

let scratch: Int32Array[] = [0, 1, 2].map(() => new Int32Array(128));
