import { SearchError } from "./errors.js";
import type { Scores } from "./filter.js";
import type { Deadline } from "./deadline.js";
import type { MemoryIndex } from "./memory-index.js";
import type { Steps } from "./scheduler.js";
import type { Words } from "./schema.js";

/**
 * SCOREFUNC (docs/search.md, "SCOREFUNC"): each FIELDVALUE's numeric value, times FACTOR, through
 * MODIFIER (MISSING when the document has none), combined across fields by COMBINEMODE, then
 * combined with the relevance score by SCOREMODE (MULTIPLY by default, SUM, or REPLACE).
 */
export interface FieldValueSpec {
  readonly field: string;
  readonly modifier: string;
  readonly factor: number;
  readonly missing: number | undefined;
}

export interface ScoreFunc {
  readonly fields: readonly FieldValueSpec[];
  readonly combineMode: string;
  readonly scoreMode: string;
}

const MODIFIERS: Record<string, (x: number) => number> = {
  NONE: (x) => x,
  LOG: (x) => Math.log10(x),
  LOG1P: (x) => Math.log10(1 + x),
  LOG2P: (x) => Math.log10(2 + x),
  LN: (x) => Math.log(x),
  LN1P: (x) => Math.log1p(x),
  LN2P: (x) => Math.log(2 + x),
  SQRT: (x) => Math.sqrt(x),
  SQUARE: (x) => x * x,
  RECIPROCAL: (x) => 1 / x,
};
const COMBINE: Record<string, (values: number[]) => number> = {
  MULTIPLY: (v) => v.reduce((a, b) => a * b, 1),
  SUM: (v) => v.reduce((a, b) => a + b, 0),
  AVG: (v) => v.reduce((a, b) => a + b, 0) / v.length,
  MAX: (v) => Math.max(...v),
  MIN: (v) => Math.min(...v),
  FIRST: (v) => v[0] ?? 0,
};
const SCORE_MODES = new Set(["MULTIPLY", "SUM", "REPLACE"]);

export function parseScoreFunc(words: Words, stop: ReadonlySet<string>): ScoreFunc {
  const fields: FieldValueSpec[] = [];
  let combineMode = "MULTIPLY";
  let scoreMode = "MULTIPLY";
  let current:
    { field: string; modifier: string; factor: number; missing: number | undefined } | undefined;
  while (words.more() && !stop.has((words.peek() as string).toUpperCase())) {
    const word = words.next("SCOREFUNC option").toUpperCase();
    if (word === "FIELDVALUE") {
      current = {
        field: words.next("FIELDVALUE field"),
        modifier: "NONE",
        factor: 1,
        missing: undefined,
      };
      fields.push(current);
    } else if (word === "COMBINEMODE")
      combineMode = choice(words, "COMBINEMODE", Object.keys(COMBINE));
    else if (word === "SCOREMODE") scoreMode = choice(words, "SCOREMODE", [...SCORE_MODES]);
    else if (word === "MODIFIER" && current)
      current.modifier = choice(words, "MODIFIER", Object.keys(MODIFIERS));
    else if (word === "FACTOR" && current) current.factor = numberArg(words, "FACTOR");
    else if (word === "MISSING" && current) current.missing = numberArg(words, "MISSING");
    else throw new SearchError(`ERR unexpected '${word}' in SCOREFUNC`);
  }
  if (fields.length === 0) throw new SearchError("ERR SCOREFUNC needs FIELDVALUE field");
  return { fields, combineMode, scoreMode };
}

function choice(words: Words, what: string, allowed: readonly string[]): string {
  const value = words.next(what).toUpperCase();
  if (!allowed.includes(value))
    throw new SearchError(`ERR ${what} must be one of ${allowed.join(", ")}`);
  return value;
}

function numberArg(words: Words, what: string): number {
  const n = Number(words.next(what));
  if (!Number.isFinite(n)) throw new SearchError(`ERR ${what} must be a number`);
  return n;
}

export function* applyScoreFunc(
  index: MemoryIndex,
  scores: Scores,
  func: ScoreFunc,
  deadline: Deadline,
): Steps<Scores> {
  const columns = func.fields.map((spec) => {
    const def = index.field(spec.field);
    if (def.type === "TEXT")
      throw new SearchError(`ERR SCOREFUNC needs a numeric field: '${spec.field}' is TEXT`);
    return { spec, values: index.columns.get(spec.field)?.values };
  });
  const combine = COMBINE[func.combineMode] as (v: number[]) => number;
  const out: Scores = new Map();
  for (const [doc, score] of scores) {
    if (deadline.tick()) yield;
    const values: number[] = [];
    for (const { spec, values: column } of columns) {
      const raw = column?.get(doc)?.[0];
      const value = typeof raw === "number" ? raw : spec.missing;
      if (value === undefined) continue;
      const modified = (MODIFIERS[spec.modifier] as (x: number) => number)(value * spec.factor);
      values.push(Number.isFinite(modified) ? modified : 0);
    }
    const fieldScore = values.length === 0 ? 1 : combine(values);
    out.set(
      doc,
      func.scoreMode === "REPLACE"
        ? fieldScore
        : func.scoreMode === "SUM"
          ? score + fieldScore
          : score * fieldScore,
    );
  }
  return out;
}
