import { queryTerms } from "./analyzer.js";
import type { Deadline } from "./deadline.js";
import { dateValue } from "./documents.js";
import { SearchError } from "./errors.js";
import {
  positionList,
  termFrequency,
  type DocId,
  type MemoryIndex,
  type TextColumn,
  type ValueColumn,
} from "./memory-index.js";
import { isNumeric, type FieldDef } from "./schema.js";
import type { Steps } from "./scheduler.js";
import { fuzzyTerms, prefixTerms, regexTerms, type FuzzyOptions } from "./terms.js";

/**
 * The JSON filter language of SEARCH.QUERY / COUNT / AGGREGATE (docs/search.md, "Filters"),
 * evaluated against a MemoryIndex into the matching documents and their scores. Text clauses
 * score with BM25 (k1 1.2, b 0.75); other clauses add a constant 1; `$boost` multiplies a
 * clause's scores. `matched` collects, per TEXT field, the index terms that matched (HIGHLIGHT).
 *
 * Every function that loops over documents or terms is a generator that yields when the
 * query's slice is over (`if (ctx.deadline.tick()) yield;`, scheduler.ts), and its callers
 * delegate with `yield*`: the query runs a slice per event-loop turn, and its result is the
 * same as in one go.
 */
export type Scores = Map<DocId, number>;

export interface FilterContext {
  readonly index: MemoryIndex;
  readonly deadline: Deadline;
  readonly matched: Map<string, Set<string>>;
}

const K1 = 1.2;
const B = 0.75;
/** Smart matching: an exact term counts this much more than a fuzzy or prefix one. */
const EXACT_BOOST = 2;
/** Smart matching of several words: documents holding them as a phrase get this much more. */
const PHRASE_BOOST = 2;

type Json = unknown;

export function* evaluate(filter: Json, ctx: FilterContext): Steps<Scores> {
  if (typeof filter !== "object" || filter === null || Array.isArray(filter)) {
    throw new SearchError("ERR the filter must be a JSON object");
  }
  const entries = Object.entries(filter as Record<string, Json>);
  if (entries.length === 0) return yield* allDocs(ctx, 1);
  const required: Scores[] = [];
  const should: Scores[] = [];
  const excluded: Scores[] = [];
  let boost = 1;
  for (const [key, value] of entries) {
    if (key === "$and" || key === "$must") required.push(...(yield* clauses(key, value, ctx)));
    else if (key === "$or") required.push(yield* union(yield* clauses(key, value, ctx), ctx));
    else if (key === "$should") should.push(...(yield* clauses(key, value, ctx)));
    else if (key === "$mustNot") excluded.push(...(yield* clauses(key, value, ctx)));
    else if (key === "$boost") boost = boostOf(value);
    else if (key.startsWith("$")) throw new SearchError(`ERR unknown operator '${key}'`);
    else required.push(yield* fieldCondition(ctx.index.field(key), value, ctx));
  }
  let result: Scores;
  if (required.length > 0) {
    result = yield* intersect(required, ctx);
    for (const s of should) yield* addScores(result, s, ctx);
  } else if (should.length > 0) result = yield* union(should, ctx);
  else result = new Map(); // $mustNot alone matches nothing (Upstash's rule)
  for (const s of excluded) {
    for (const doc of s.keys()) {
      if (ctx.deadline.tick()) yield;
      result.delete(doc);
    }
  }
  return boost === 1 ? result : yield* scaled(result, boost, ctx);
}

function* clauses(op: string, value: Json, ctx: FilterContext): Steps<Scores[]> {
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0) throw new SearchError(`ERR ${op} needs at least one filter`);
  const out: Scores[] = [];
  for (const f of list) out.push(yield* evaluate(f, ctx));
  return out;
}

function boostOf(value: Json): number {
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new SearchError("ERR $boost must be a number");
  }
  return value;
}

function* fieldCondition(field: FieldDef, value: Json, ctx: FilterContext): Steps<Scores> {
  if (
    typeof value !== "object" ||
    value === null ||
    Array.isArray(value) ||
    value instanceof Date
  ) {
    return field.type === "TEXT"
      ? yield* smart(field, value, ctx)
      : yield* valueOperator(field, "$eq", value, ctx);
  }
  const parts: Scores[] = [];
  let boost = 1;
  for (const [op, operand] of Object.entries(value as Record<string, Json>)) {
    if (op === "$boost") boost = boostOf(operand);
    else
      parts.push(
        field.type === "TEXT"
          ? yield* textOperator(field, op, operand, ctx)
          : yield* valueOperator(field, op, operand, ctx),
      );
  }
  if (parts.length === 0) throw new SearchError(`ERR no operator for field '${field.name}'`);
  const result = yield* intersect(parts, ctx);
  return boost === 1 ? result : yield* scaled(result, boost, ctx);
}

// ---- TEXT ----

function* textOperator(
  field: FieldDef,
  op: string,
  operand: Json,
  ctx: FilterContext,
): Steps<Scores> {
  switch (op) {
    case "$eq":
      return yield* allTerms(field, stringOf(op, operand), ctx);
    case "$ne":
      return yield* complement(yield* allTerms(field, stringOf(op, operand), ctx), ctx);
    case "$in": {
      const each: Scores[] = [];
      for (const v of listOf(op, operand)) each.push(yield* allTerms(field, stringOf(op, v), ctx));
      return yield* union(each, ctx);
    }
    case "$smart":
      return yield* smart(field, operand, ctx);
    case "$fuzzy":
      return yield* fuzzy(field, operand, ctx);
    case "$phrase":
      return yield* phrase(field, operand, ctx);
    case "$regex": {
      const column = textColumn(ctx, field);
      const terms = yield* regexTerms(column, stringOf(op, operand), ctx.deadline);
      return yield* expanded(field, terms, 1, ctx);
    }
    default:
      throw new SearchError(`ERR operator '${op}' does not apply to TEXT field '${field.name}'`);
  }
}

function textColumn(ctx: FilterContext, field: FieldDef): TextColumn {
  return ctx.index.text.get(field.name) as TextColumn;
}

/** Documents holding every term of the value (BM25, summed). */
function* allTerms(field: FieldDef, text: string, ctx: FilterContext): Steps<Scores> {
  const terms = queryTerms(text, field, ctx.index.def.language);
  if (terms.length === 0) return new Map();
  const each: Scores[] = [];
  for (const t of terms) each.push(yield* expanded(field, [t], 1, ctx));
  return yield* intersect(each, ctx);
}

/** Documents holding any of `terms`, each scored by its best term. */
function* expanded(
  field: FieldDef,
  terms: readonly string[],
  weight: number,
  ctx: FilterContext,
): Steps<Scores> {
  const column = textColumn(ctx, field);
  const out: Scores = new Map();
  const n = ctx.index.size;
  const avg = column.averageLength(n);
  for (const term of terms) {
    const docs = column.postings.get(term);
    if (docs === undefined) continue;
    noteMatch(ctx, field, term);
    const idf = Math.log(1 + (n - docs.size + 0.5) / (docs.size + 0.5));
    for (const [doc, positions] of docs) {
      if (ctx.deadline.tick()) yield;
      const tf = termFrequency(positions);
      const len = column.lengths.get(doc) ?? 1;
      const score = (weight * idf * (tf * (K1 + 1))) / (tf + K1 * (1 - B + (B * len) / avg));
      out.set(doc, Math.max(out.get(doc) ?? 0, score));
    }
  }
  return out;
}

function noteMatch(ctx: FilterContext, field: FieldDef, term: string): void {
  let set = ctx.matched.get(field.name);
  if (set === undefined) ctx.matched.set(field.name, (set = new Set()));
  set.add(term);
}

/**
 * `$smart` and a bare value: per word, the exact term (boosted), terms within one edit, and
 * terms starting with a term within one edit; several words must all match, and documents
 * holding them as a phrase score higher.
 */
function* smart(field: FieldDef, value: Json, ctx: FilterContext): Steps<Scores> {
  const text = stringOf("$smart", value);
  const terms = queryTerms(text, field, ctx.index.def.language);
  if (terms.length === 0) return new Map();
  const column = textColumn(ctx, field);
  const opts = { distance: 1, transpositionCostOne: true, prefix: false };
  const perWord: Scores[] = [];
  for (const term of terms) {
    const exact = yield* expanded(field, [term], EXACT_BOOST, ctx);
    const near = yield* expanded(
      field,
      yield* fuzzyTerms(column, term, opts, ctx.deadline),
      1,
      ctx,
    );
    const start =
      term.length >= 2
        ? yield* fuzzyTerms(column, term, { ...opts, prefix: true }, ctx.deadline)
        : [];
    perWord.push(yield* union([exact, near, yield* expanded(field, start, 0.5, ctx)], ctx));
  }
  const result = yield* intersect(perWord, ctx);
  if (terms.length > 1) {
    const phrased = yield* phraseOf(
      field,
      terms.map((t) => [t]),
      0,
      ctx,
    );
    yield* addScores(result, yield* scaled(phrased, PHRASE_BOOST, ctx), ctx);
  }
  return result;
}

function* fuzzy(field: FieldDef, operand: Json, ctx: FilterContext): Steps<Scores> {
  const spec = typeof operand === "string" ? { value: operand } : objectOf("$fuzzy", operand);
  const opts: FuzzyOptions = {
    distance: spec.distance === undefined ? 1 : Number(spec.distance),
    transpositionCostOne: spec.transpositionCostOne !== false,
    prefix: spec.prefix === true,
  };
  const terms = queryTerms(stringOf("$fuzzy", spec.value), field, ctx.index.def.language);
  if (terms.length === 0) return new Map();
  const column = textColumn(ctx, field);
  const each: Scores[] = [];
  for (const t of terms) {
    each.push(yield* expanded(field, yield* fuzzyTerms(column, t, opts, ctx.deadline), 1, ctx));
  }
  return yield* intersect(each, ctx);
}

function* phrase(field: FieldDef, operand: Json, ctx: FilterContext): Steps<Scores> {
  const spec = typeof operand === "string" ? { value: operand } : objectOf("$phrase", operand);
  const slop = spec.slop === undefined ? 0 : Number(spec.slop);
  if (!Number.isInteger(slop) || slop < 0 || slop > 100) {
    throw new SearchError("ERR $phrase slop must be an integer from 0 to 100");
  }
  const terms = queryTerms(stringOf("$phrase", spec.value), field, ctx.index.def.language);
  if (terms.length === 0) return new Map();
  const column = textColumn(ctx, field);
  const alternatives = terms.map((t, i) =>
    spec.prefix === true && i === terms.length - 1 ? prefixTerms(column, t) : [t],
  );
  return yield* phraseOf(field, alternatives, slop, ctx);
}

/**
 * Documents where the words occur in order, the gaps between them adding up to at most `slop`
 * positions; each word given as its alternative terms (a prefix's expansions).
 */
function* phraseOf(
  field: FieldDef,
  words: string[][],
  slop: number,
  ctx: FilterContext,
): Steps<Scores> {
  const column = textColumn(ctx, field);
  const scored: Scores[] = [];
  for (const alts of words) scored.push(yield* expanded(field, alts, 1, ctx));
  const candidates = yield* intersect(scored, ctx);
  for (const doc of [...candidates.keys()]) {
    // The clock at each document: one may merge the positions of thousands of prefix terms.
    if (ctx.deadline.due()) yield;
    const positions = words.map((alts) => mergedPositions(column, alts, doc));
    if (!inOrder(positions, slop)) candidates.delete(doc);
  }
  return candidates;
}

function mergedPositions(column: TextColumn, terms: readonly string[], doc: DocId): number[] {
  const of = (t: string): number[] => {
    const p = column.postings.get(t)?.get(doc);
    return p === undefined ? [] : positionList(p);
  };
  if (terms.length === 1) return of(terms[0] as string);
  return terms.flatMap(of).sort((a, b) => a - b);
}

function inOrder(positions: readonly number[][], slop: number): boolean {
  for (const first of positions[0] ?? []) {
    let at = first;
    let used = 0;
    let ok = true;
    for (const list of positions.slice(1)) {
      const next = list.find((p) => p > at && p - at - 1 <= slop - used);
      if (next === undefined) {
        ok = false;
        break;
      }
      used += next - at - 1;
      at = next;
    }
    if (ok) return true;
  }
  return false;
}

// ---- numbers, booleans, dates, keywords, facets ----

type Value = string | number;

function* valueOperator(
  field: FieldDef,
  op: string,
  operand: Json,
  ctx: FilterContext,
): Steps<Scores> {
  const column = ctx.index.columns.get(field.name);
  if (column === undefined) return new Map();
  if (RANGES.has(op) && ordered(field)) {
    return yield* inRange(column, op, operandValue(field, operand), ctx);
  }
  const test = valueTest(field, op, operand);
  const out: Scores = new Map();
  for (const [doc, values] of column.values) {
    if (ctx.deadline.tick()) yield;
    if (values.some(test)) out.set(doc, 1);
  }
  return op === "$ne" ? yield* complement(out, ctx) : out;
}

const RANGES = new Set(["$gt", "$gte", "$lt", "$lte"]);
const ordered = (field: FieldDef): boolean =>
  isNumeric(field.type) || field.type === "DATE" || field.type === "KEYWORD";

/** Documents with a value past the bound, by binary search in the column's sorted view. */
function* inRange(
  column: ValueColumn,
  op: string,
  bound: Value,
  ctx: FilterContext,
): Steps<Scores> {
  const { values, docs } = yield* column.sorted(ctx.deadline);
  const first = (strict: boolean): number => {
    let lo = 0;
    let hi = values.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const v = values[mid] as Value;
      if (v < bound || (strict && v === bound)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const [from, to] =
    op === "$gt"
      ? [first(true), values.length]
      : op === "$gte"
        ? [first(false), values.length]
        : op === "$lt"
          ? [0, first(false)]
          : [0, first(true)];
  const out: Scores = new Map();
  for (let i = from; i < to; i++) {
    if (ctx.deadline.tick()) yield;
    out.set(docs[i] as DocId, 1);
  }
  return out;
}

function valueTest(field: FieldDef, op: string, operand: Json): (v: Value) => boolean {
  switch (op) {
    case "$eq":
    case "$ne": {
      const want = operandValue(field, operand);
      return (v) => v === want;
    }
    case "$in": {
      const set = new Set(listOf(op, operand).map((o) => operandValue(field, o)));
      return (v) => set.has(v);
    }
    case "$gt":
    case "$gte":
    case "$lt":
    case "$lte": {
      if (!ordered)
        throw new SearchError(
          `ERR operator '${op}' does not apply to ${field.type} field '${field.name}'`,
        );
      const bound = operandValue(field, operand);
      if (op === "$gt") return (v) => v > bound;
      if (op === "$gte") return (v) => v >= bound;
      if (op === "$lt") return (v) => v < bound;
      return (v) => v <= bound;
    }
    default:
      throw new SearchError(
        `ERR operator '${op}' does not apply to ${field.type} field '${field.name}'`,
      );
  }
}

/** A query operand in the field's indexed form (see documents.ts `convert`). */
function operandValue(field: FieldDef, operand: Json): Value {
  let value: Value | undefined;
  if (field.type === "BOOL")
    value =
      operand === true || operand === "true"
        ? 1
        : operand === false || operand === "false"
          ? 0
          : undefined;
  else if (field.type === "DATE") value = dateValue(operand);
  else if (isNumeric(field.type)) {
    const n =
      typeof operand === "number" ? operand : typeof operand === "string" ? Number(operand) : NaN;
    value = Number.isFinite(n) ? n : undefined;
  } else
    value =
      typeof operand === "string"
        ? operand
        : typeof operand === "number"
          ? String(operand)
          : undefined;
  if (value === undefined) {
    throw new SearchError(
      `ERR ${JSON.stringify(operand)} is not a valid ${field.type} value for field '${field.name}'`,
    );
  }
  return value;
}

// ---- sets of scored documents ----

function* allDocs(ctx: FilterContext, score: number): Steps<Scores> {
  const out: Scores = new Map();
  for (const doc of ctx.index.allDocs()) {
    if (ctx.deadline.tick()) yield;
    out.set(doc, score);
  }
  return out;
}

function* complement(s: Scores, ctx: FilterContext): Steps<Scores> {
  const out: Scores = new Map();
  for (const doc of ctx.index.allDocs()) {
    if (ctx.deadline.tick()) yield;
    if (!s.has(doc)) out.set(doc, 1);
  }
  return out;
}

/**
 * Documents in every set, their scores summed (smallest set first). Every set handed to it is
 * new and the caller's alone (each clause builds its own), so a single one is the answer as is.
 */
function* intersect(sets: readonly Scores[], ctx: FilterContext): Steps<Scores> {
  if (sets.length === 1) return sets[0] as Scores;
  const sorted = [...sets].sort((a, b) => a.size - b.size);
  const out: Scores = new Map();
  outer: for (const [doc, score] of sorted[0] ?? new Map<DocId, number>()) {
    if (ctx.deadline.tick()) yield;
    let total = score;
    for (const other of sorted.slice(1)) {
      const s = other.get(doc);
      if (s === undefined) continue outer;
      total += s;
    }
    out.set(doc, total);
  }
  return out;
}

function* union(sets: readonly Scores[], ctx: FilterContext): Steps<Scores> {
  const out: Scores = new Map();
  for (const s of sets) yield* addScores(out, s, ctx, true);
  return out;
}

/** Adds `from`'s scores to the documents of `into` (and, with `insert`, its other documents). */
function* addScores(into: Scores, from: Scores, ctx: FilterContext, insert = false): Steps<void> {
  for (const [doc, score] of from) {
    if (ctx.deadline.tick()) yield;
    const had = into.get(doc);
    if (had !== undefined) into.set(doc, had + score);
    else if (insert) into.set(doc, score);
  }
}

function* scaled(s: Scores, factor: number, ctx: FilterContext): Steps<Scores> {
  const out: Scores = new Map();
  for (const [doc, score] of s) {
    if (ctx.deadline.tick()) yield;
    out.set(doc, score * factor);
  }
  return out;
}

function stringOf(op: string, v: Json): string {
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  throw new SearchError(`ERR ${op} needs a string`);
}

function listOf(op: string, v: Json): Json[] {
  if (!Array.isArray(v)) throw new SearchError(`ERR ${op} needs an array`);
  return v;
}

function objectOf(op: string, v: Json): Record<string, Json> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw new SearchError(`ERR ${op} needs a string or an object`);
  }
  return v as Record<string, Json>;
}
