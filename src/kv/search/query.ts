import type { Arg } from "../../shared/redis/resp.js";
import { Deadline } from "./deadline.js";
import { SearchError } from "./errors.js";
import { evaluate, type Scores } from "./filter.js";
import type { DocId, MemoryIndex } from "./memory-index.js";
import type { Steps } from "./scheduler.js";
import { Words } from "./schema.js";
import { parseScoreFunc, applyScoreFunc, type ScoreFunc } from "./score-func.js";
import { firstSteps, sortSteps } from "./sort-steps.js";

/**
 * SEARCH.QUERY / SEARCH.COUNT options (docs/search.md, "SEARCH.QUERY") and the ranked page of
 * matches. Ordering guarantees: by score, highest first, ties by key (byte order); with ORDERBY,
 * by the FAST field's first value, documents without one last, ties by key.
 */
export interface QueryOptions {
  readonly filter: unknown;
  readonly limit: number;
  readonly offset: number;
  readonly noContent: boolean;
  readonly orderBy: readonly { field: string; desc: boolean }[];
  readonly scoreFunc: ScoreFunc | undefined;
  readonly highlight: { fields: readonly string[]; pre: string; post: string } | undefined;
  readonly select: readonly string[] | undefined;
}

const DEFAULT_LIMIT = 10;
const KEYWORDS = new Set([
  "LIMIT",
  "OFFSET",
  "NOCONTENT",
  "ORDERBY",
  "SCOREFUNC",
  "HIGHLIGHT",
  "SELECT",
]);

export function parseFilter(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new SearchError("ERR the filter is not valid JSON");
  }
}

/** Reads the options after `SEARCH.QUERY name filter`. */
export function parseQueryOptions(
  filter: string,
  args: readonly Arg[],
  maxLimit: number,
): QueryOptions {
  const words = new Words(args);
  const opts = {
    filter: parseFilter(filter),
    limit: DEFAULT_LIMIT,
    offset: 0,
    noContent: false,
    orderBy: [] as { field: string; desc: boolean }[],
    scoreFunc: undefined as ScoreFunc | undefined,
    highlight: undefined as QueryOptions["highlight"],
    select: undefined as string[] | undefined,
  };
  while (words.more()) {
    const word = words.next("option").toUpperCase();
    if (word === "LIMIT") opts.limit = count(words, "LIMIT", 0, maxLimit);
    else if (word === "OFFSET") opts.offset = count(words, "OFFSET", 0, Number.MAX_SAFE_INTEGER);
    else if (word === "NOCONTENT") opts.noContent = true;
    else if (word === "ORDERBY") opts.orderBy = parseOrderBy(words);
    else if (word === "SCOREFUNC") opts.scoreFunc = parseScoreFunc(words, KEYWORDS);
    else if (word === "HIGHLIGHT") opts.highlight = parseHighlight(words);
    else if (word === "SELECT") opts.select = names(words, "SELECT");
    else throw new SearchError(`ERR unknown SEARCH.QUERY option '${word}'`);
  }
  if (opts.orderBy.length > 0 && opts.scoreFunc) {
    throw new SearchError("ERR ORDERBY and SCOREFUNC cannot be used together");
  }
  return opts;
}

function count(words: Words, what: string, min: number, max: number): number {
  const n = Number(words.next(`${what} value`));
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new SearchError(
      what === "LIMIT"
        ? `ERR LIMIT must be an integer from 0 to ${max} (STASHD_SEARCH_MAX_LIMIT)`
        : `ERR ${what} must be a non-negative integer`,
    );
  }
  return n;
}

function parseOrderBy(words: Words): { field: string; desc: boolean }[] {
  const out: { field: string; desc: boolean }[] = [];
  while (words.more() && !KEYWORDS.has((words.peek() as string).toUpperCase())) {
    const field = words.next("ORDERBY field");
    const dir = words.next("ASC or DESC").toUpperCase();
    if (dir !== "ASC" && dir !== "DESC") throw new SearchError("ERR ORDERBY needs ASC or DESC");
    out.push({ field, desc: dir === "DESC" });
  }
  if (out.length === 0) throw new SearchError("ERR ORDERBY needs a field");
  return out;
}

function parseHighlight(words: Words): QueryOptions["highlight"] {
  let fields: string[] = [];
  let pre = "<em>";
  let post = "</em>";
  while (words.more()) {
    const word = (words.peek() as string).toUpperCase();
    if (word === "FIELDS") {
      words.next("FIELDS");
      fields = names(words, "HIGHLIGHT FIELDS");
    } else if (word === "TAGS") {
      words.next("TAGS");
      pre = words.next("highlight pre-tag");
      post = words.next("highlight post-tag");
    } else break;
  }
  return { fields, pre, post };
}

function names(words: Words, what: string): string[] {
  const n = count(words, `${what} count`, 0, 1024);
  return Array.from({ length: n }, () => words.next(`${what} field`));
}

export interface Ranked {
  readonly doc: DocId;
  readonly key: string;
  readonly score: number;
}

/** The matches of the filter, with the terms that matched per field (for HIGHLIGHT). */
export function* matchesOf(
  index: MemoryIndex,
  filter: unknown,
  deadline: Deadline,
): Steps<{ scores: Scores; matched: Map<string, Set<string>> }> {
  const matched = new Map<string, Set<string>>();
  const scores = yield* evaluate(filter, { index, deadline, matched });
  return { scores, matched };
}

/**
 * The requested page of matches, ranked (see the ordering guarantees above). A document removed
 * from the index while the query ran (between two of its slices) is left out.
 */
export function* rankedPage(
  index: MemoryIndex,
  scores: Scores,
  opts: QueryOptions,
  deadline: Deadline,
): Steps<Ranked[]> {
  const scored = opts.scoreFunc
    ? yield* applyScoreFunc(index, scores, opts.scoreFunc, deadline)
    : scores;
  const compare = opts.orderBy.length > 0 ? fieldOrder(index, opts.orderBy) : byScore;
  const all: Ranked[] = [];
  for (const [doc, score] of scored) {
    if (deadline.tick()) yield;
    const key = index.keyOf(doc);
    if (key !== undefined) all.push({ doc, key, score });
  }
  const end = opts.offset + opts.limit;
  // A first page (most queries) needs only its documents in order: a bounded heap, not a sort.
  if (end * 8 <= all.length) {
    return (yield* firstSteps(all, end, compare, deadline)).slice(opts.offset);
  }
  yield* sortSteps(all, compare, deadline);
  return all.slice(opts.offset, end);
}

const byKey = (a: Ranked, b: Ranked): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
const byScore = (a: Ranked, b: Ranked): number => b.score - a.score || byKey(a, b);

function fieldOrder(index: MemoryIndex, orderBy: QueryOptions["orderBy"]) {
  const columns = orderBy.map(({ field, desc }) => {
    const def = index.field(field);
    if (!def.fast) throw new SearchError(`ERR ORDERBY needs a FAST field: '${field}' is not FAST`);
    return { values: index.columns.get(field)?.values, desc };
  });
  return (a: Ranked, b: Ranked): number => {
    for (const { values, desc } of columns) {
      const va = values?.get(a.doc)?.[0];
      const vb = values?.get(b.doc)?.[0];
      if (va === vb) continue;
      if (va === undefined) return 1;
      if (vb === undefined) return -1;
      const c = va < vb ? -1 : 1;
      return desc ? -c : c;
    }
    return byKey(a, b);
  };
}
