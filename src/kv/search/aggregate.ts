import type { Deadline } from "./deadline.js";
import { dateValue } from "./documents.js";
import { SearchError } from "./errors.js";
import type { DocId, MemoryIndex } from "./memory-index.js";
import type { Plain } from "./reply.js";
import type { Steps } from "./scheduler.js";
import { sortSteps } from "./sort-steps.js";

/**
 * SEARCH.AGGREGATE (docs/search.md, "SEARCH.AGGREGATE"): metric aggregations ($avg, $sum, $min,
 * $max, $count, $stats, $extendedStats, $cardinality, $percentiles), bucket aggregations
 * ($terms, $range, $histogram, $dateHistogram) with nested `$aggs`, and facet trees ($facet),
 * over the documents the filter matched. Replies are flat `[name, value, …]` arrays, as the SDK
 * reads them. Bucket order: $terms by document count (ties by key), the others by key.
 * Generators that yield when the query's slice is over (see filter.ts).
 */
type Spec = Record<string, unknown>;
type Value = string | number;

const MAX_BUCKETS = 10_000;

export function* aggregate(
  index: MemoryIndex,
  docs: DocId[],
  spec: unknown,
  deadline: Deadline,
): Steps<Plain[]> {
  if (typeof spec !== "object" || spec === null || Array.isArray(spec)) {
    throw new SearchError("ERR the aggregations must be a JSON object");
  }
  const out: Plain[] = [];
  for (const [name, body] of Object.entries(spec as Spec)) {
    out.push(name, yield* one(index, docs, name, body, deadline));
  }
  return out;
}

type Nested = (bucketDocs: DocId[]) => Steps<Plain[]>;

function* one(
  index: MemoryIndex,
  docs: DocId[],
  name: string,
  body: unknown,
  deadline: Deadline,
): Steps<Plain> {
  if (typeof body !== "object" || body === null)
    throw new SearchError(`ERR aggregation '${name}' must be an object`);
  const entries = Object.entries(body as Spec).filter(([k]) => k !== "$aggs");
  const [op, params] = entries[0] ?? [];
  if (entries.length !== 1 || op === undefined || typeof params !== "object" || params === null) {
    throw new SearchError(`ERR aggregation '${name}' needs exactly one operator`);
  }
  const sub = (body as Spec).$aggs;
  const p = params as Spec;
  const nested: Nested = function* (bucketDocs) {
    return sub === undefined ? [] : yield* aggregate(index, bucketDocs, sub, deadline);
  };
  deadline.check();
  switch (op) {
    case "$avg":
    case "$sum":
    case "$min":
    case "$max":
    case "$count":
      return ["value", metric(op, yield* numbers(index, docs, p, deadline))];
    case "$cardinality":
      return [
        "value",
        new Set((yield* values(index, docs, p, deadline)).flatMap(([, v]) => v)).size,
      ];
    case "$stats":
      return stats(yield* numbers(index, docs, p, deadline));
    case "$extendedStats":
      return extendedStats(
        yield* numbers(index, docs, p, deadline),
        p.sigma === undefined ? 2 : Number(p.sigma),
      );
    case "$percentiles":
      return yield* percentiles(yield* numbers(index, docs, p, deadline), p, deadline);
    case "$terms":
      return yield* terms(index, docs, p, nested, deadline);
    case "$range":
      return yield* ranges(index, docs, p, nested, deadline);
    case "$histogram":
      return yield* histogram(index, docs, p, Number(p.interval), nested, deadline);
    case "$dateHistogram":
      return yield* histogram(index, docs, p, intervalMs(p), nested, deadline);
    case "$facet":
      return yield* facet(index, docs, p, deadline);
    default:
      throw new SearchError(`ERR unknown aggregation '${op}'`);
  }
}

/** Each document's values of the field (or `missing`), documents without either left out. */
function* values(
  index: MemoryIndex,
  docs: DocId[],
  p: Spec,
  deadline: Deadline,
): Steps<[DocId, Value[]][]> {
  const fieldName = String(p.field);
  const field = index.field(fieldName);
  if (field.type === "TEXT")
    throw new SearchError(`ERR aggregations need a non-TEXT field: '${fieldName}' is TEXT`);
  const column = index.columns.get(fieldName)?.values;
  const missing =
    p.missing === undefined
      ? undefined
      : field.type === "DATE"
        ? dateValue(p.missing)
        : (p.missing as Value);
  const out: [DocId, Value[]][] = [];
  for (const doc of docs) {
    if (deadline.tick()) yield;
    const v = column?.get(doc);
    if (v !== undefined && v.length > 0) out.push([doc, [...v]]);
    else if (missing !== undefined) out.push([doc, [missing]]);
  }
  return out;
}

function* numbers(index: MemoryIndex, docs: DocId[], p: Spec, deadline: Deadline): Steps<number[]> {
  return (yield* values(index, docs, p, deadline)).flatMap(([, v]) =>
    v.filter((x): x is number => typeof x === "number"),
  );
}

function metric(op: string, nums: number[]): number | null {
  if (op === "$count") return nums.length;
  if (op === "$sum") return nums.reduce((a, b) => a + b, 0);
  if (nums.length === 0) return null;
  if (op === "$avg") return nums.reduce((a, b) => a + b, 0) / nums.length;
  return op === "$min" ? Math.min(...nums) : Math.max(...nums);
}

function stats(nums: number[]): Plain[] {
  return [
    "count",
    nums.length,
    "min",
    metric("$min", nums),
    "max",
    metric("$max", nums),
    "sum",
    metric("$sum", nums),
    "avg",
    metric("$avg", nums),
  ];
}

function extendedStats(nums: number[], sigma: number): Plain[] {
  const n = nums.length;
  const sum = nums.reduce((a, b) => a + b, 0);
  const avg = n === 0 ? 0 : sum / n;
  const sumOfSquares = nums.reduce((a, b) => a + b * b, 0);
  const variance = n === 0 ? 0 : sumOfSquares / n - avg * avg;
  const varianceSampling = n < 2 ? 0 : (variance * n) / (n - 1);
  const sd = Math.sqrt(Math.max(0, variance));
  const sdSampling = Math.sqrt(Math.max(0, varianceSampling));
  return [
    ...stats(nums),
    "sumOfSquares",
    sumOfSquares,
    "variance",
    variance,
    "variancePopulation",
    variance,
    "varianceSampling",
    varianceSampling,
    "stdDeviation",
    sd,
    "stdDeviationPopulation",
    sd,
    "stdDeviationSampling",
    sdSampling,
    "stdDeviationBounds",
    [
      "upper",
      avg + sigma * sd,
      "lower",
      avg - sigma * sd,
      "upperPopulation",
      avg + sigma * sd,
      "lowerPopulation",
      avg - sigma * sd,
      "upperSampling",
      avg + sigma * sdSampling,
      "lowerSampling",
      avg - sigma * sdSampling,
    ],
  ];
}

const DEFAULT_PERCENTS = [1, 5, 25, 50, 75, 95, 99];

function* percentiles(nums: number[], p: Spec, deadline: Deadline): Steps<Plain[]> {
  const percents = Array.isArray(p.percents) ? p.percents.map(Number) : DEFAULT_PERCENTS;
  const sorted = yield* sortSteps([...nums], (a, b) => a - b, deadline);
  const at = (pct: number): number | null => {
    if (sorted.length === 0) return null;
    const rank = (pct / 100) * (sorted.length - 1);
    const lo = Math.floor(rank);
    const hi = Math.ceil(rank);
    return (sorted[lo] as number) + ((sorted[hi] as number) - (sorted[lo] as number)) * (rank - lo);
  };
  if (p.keyed === false) return ["values", percents.map((pct) => ["key", pct, "value", at(pct)])];
  return [
    "values",
    percents.flatMap((pct) => [Number.isInteger(pct) ? pct.toFixed(1) : String(pct), at(pct)]),
  ];
}

function* terms(
  index: MemoryIndex,
  docs: DocId[],
  p: Spec,
  nested: Nested,
  deadline: Deadline,
): Steps<Plain[]> {
  const size = p.size === undefined ? 10 : Number(p.size);
  const groups = new Map<Value, DocId[]>();
  for (const [doc, vs] of yield* values(index, docs, p, deadline)) {
    if (deadline.tick()) yield;
    for (const v of new Set(vs)) {
      let list = groups.get(v);
      if (list === undefined) groups.set(v, (list = []));
      list.push(doc);
    }
  }
  const sorted = yield* sortSteps(
    [...groups],
    ([ka, a], [kb, b]) => b.length - a.length || (ka < kb ? -1 : ka > kb ? 1 : 0),
    deadline,
  );
  const kept = sorted.slice(0, Math.min(size, MAX_BUCKETS));
  const other = sorted.slice(kept.length).reduce((n, [, d]) => n + d.length, 0);
  const buckets: Plain[] = [];
  for (const [key, d] of kept)
    buckets.push(["key", key, "docCount", d.length, ...(yield* nested(d))]);
  return ["buckets", buckets, "sumOtherDocCount", other, "docCountErrorUpperBound", 0];
}

function* ranges(
  index: MemoryIndex,
  docs: DocId[],
  p: Spec,
  nested: Nested,
  deadline: Deadline,
): Steps<Plain[]> {
  if (!Array.isArray(p.ranges)) throw new SearchError("ERR $range needs ranges");
  const vals = yield* values(index, docs, p, deadline);
  const buckets: Plain[] = [];
  for (const r of p.ranges as Spec[]) {
    const from = r.from === undefined ? undefined : Number(r.from);
    const to = r.to === undefined ? undefined : Number(r.to);
    const inside: DocId[] = [];
    for (const [d, vs] of vals) {
      if (deadline.tick()) yield;
      const within = (v: Value) =>
        typeof v === "number" && (from === undefined || v >= from) && (to === undefined || v < to);
      if (vs.some(within)) inside.push(d);
    }
    const key = typeof r.key === "string" ? r.key : `${from ?? "*"}-${to ?? "*"}`;
    buckets.push([
      "key",
      key,
      "docCount",
      inside.length,
      ...(from === undefined ? [] : ["from", from]),
      ...(to === undefined ? [] : ["to", to]),
      ...(yield* nested(inside)),
    ]);
  }
  return ["buckets", buckets];
}

function* histogram(
  index: MemoryIndex,
  docs: DocId[],
  p: Spec,
  interval: number,
  nested: Nested,
  deadline: Deadline,
): Steps<Plain[]> {
  if (!Number.isFinite(interval) || interval <= 0)
    throw new SearchError("ERR the histogram interval must be a positive number");
  const groups = new Map<number, DocId[]>();
  for (const [doc, vs] of yield* values(index, docs, p, deadline)) {
    if (deadline.tick()) yield;
    for (const v of new Set(vs.map((x) => Math.floor(Number(x) / interval) * interval))) {
      let list = groups.get(v);
      if (list === undefined) groups.set(v, (list = []));
      list.push(doc);
    }
  }
  const keys = yield* sortSteps([...groups.keys()], (a, b) => a - b, deadline);
  const first = keys[0];
  const last = keys[keys.length - 1];
  const minDocCount = p.minDocCount === undefined ? 0 : Number(p.minDocCount);
  const buckets: Plain[] = [];
  if (first !== undefined && last !== undefined) {
    if ((last - first) / interval > MAX_BUCKETS)
      throw new SearchError(`ERR the histogram would have more than ${MAX_BUCKETS} buckets`);
    for (let k = first; k <= last; k += interval) {
      if (deadline.tick()) yield;
      const d = groups.get(k) ?? [];
      if (d.length >= minDocCount) {
        buckets.push(["key", k, "docCount", d.length, ...(yield* nested(d))]);
      }
    }
  }
  return ["buckets", buckets];
}

const UNITS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

function intervalMs(p: Spec): number {
  const text = String(p.fixedInterval ?? p.interval ?? p.calendarInterval ?? "");
  const m = /^(\d+)(ms|s|m|h|d|w)$/.exec(text);
  if (!m) throw new SearchError("ERR $dateHistogram needs fixedInterval like 30m, 1h or 1d");
  return Number(m[1]) * (UNITS[m[2] as string] as number);
}

/** A facet tree under `path`, `depth` levels deep, children by document count. */
function* facet(index: MemoryIndex, docs: DocId[], p: Spec, deadline: Deadline): Steps<Plain[]> {
  const root = String(p.path ?? "/").replace(/\/$/, "");
  const depth = p.depth === undefined ? 1 : Number(p.depth);
  const size = p.size === undefined ? 10 : Number(p.size);
  const paths = (yield* values(index, docs, p, deadline)).map(([, vs]) => vs.map(String));
  const tree = yield* facetChildren(paths, root, depth, size, deadline);
  return ["path", root === "" ? "/" : root, ...tree];
}

function* facetChildren(
  paths: string[][],
  root: string,
  depth: number,
  size: number,
  deadline: Deadline,
): Steps<Plain[]> {
  const counts = new Map<string, number>();
  for (const docPaths of paths) {
    if (deadline.tick()) yield;
    const children = new Set<string>();
    for (const path of docPaths) {
      if (!path.startsWith(`${root}/`)) continue;
      const next = path.slice(root.length + 1).split("/")[0];
      if (next) children.add(`${root}/${next}`);
    }
    for (const c of children) counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  const sorted = yield* sortSteps(
    [...counts],
    ([a, x], [b, y]) => y - x || (a < b ? -1 : 1),
    deadline,
  );
  const kept = sorted.slice(0, size);
  const other = sorted.slice(size).reduce((n, [, c]) => n + c, 0);
  const children: Plain[] = [];
  for (const [path, docCount] of kept) {
    const below =
      depth > 1
        ? yield* facetChildren(paths, path, depth - 1, size, deadline)
        : ["sumOtherDocCount", 0];
    children.push(["docCount", docCount, "path", path, ...below]);
  }
  return ["sumOtherDocCount", other, "children", children];
}
