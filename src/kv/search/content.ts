import { analyze } from "./analyzer.js";
import { rawValues, type Source } from "./documents.js";
import type { MemoryIndex } from "./memory-index.js";
import type { QueryOptions } from "./query.js";
import type { FieldDef } from "./schema.js";

/**
 * A result's `[field, value]` pairs: the SELECTed fields (dotted names; the SDK nests them), or
 * the whole document (`["$", JSON text]` for JSON and STRING, every field for HASH). HIGHLIGHT
 * wraps, in the TEXT fields it names, the tokens whose terms matched the query.
 */
export type Pairs = [string, string][];

export function contentOf(
  index: MemoryIndex,
  source: Source,
  opts: QueryOptions,
  matched: Map<string, Set<string>>,
): Pairs {
  const marks = highlighter(index, opts, matched);
  if (opts.select !== undefined) {
    const pairs: Pairs = [];
    for (const name of opts.select) {
      const field = index.def.fields.find((f) => f.name === name);
      const values = rawValues(source, field?.source ?? name);
      if (values.length === 0) continue;
      const value = values.length === 1 ? values[0] : values;
      pairs.push([name, text(marks(name, value))]);
    }
    return pairs;
  }
  if (source.kind === "hash") {
    return [...source.fields].map(([k, v]) => [k, text(marks(k, v))]);
  }
  return [["$", JSON.stringify(highlightedDocument(index, source.value, marks))]];
}

type Marker = (fieldName: string, value: unknown) => unknown;

function highlighter(
  index: MemoryIndex,
  opts: QueryOptions,
  matched: Map<string, Set<string>>,
): Marker {
  const h = opts.highlight;
  if (h === undefined || h.fields.length === 0) return (_f, v) => v;
  return (name, value) => {
    const field = index.def.fields.find((f) => f.name === name);
    const terms = matched.get(name);
    if (
      !h.fields.includes(name) ||
      field?.type !== "TEXT" ||
      terms === undefined ||
      typeof value !== "string"
    ) {
      return value;
    }
    return highlight(value, field, index, terms, h.pre, h.post);
  };
}

function highlight(
  value: string,
  field: FieldDef,
  index: MemoryIndex,
  terms: Set<string>,
  pre: string,
  post: string,
): string {
  let out = "";
  let at = 0;
  for (const token of analyze(value, field, index.def.language)) {
    if (!terms.has(token.term)) continue;
    out += value.slice(at, token.start) + pre + value.slice(token.start, token.end) + post;
    at = token.end;
  }
  return out + value.slice(at);
}

/** The JSON document with the highlighted fields' string values marked. */
function highlightedDocument(index: MemoryIndex, doc: unknown, marks: Marker): unknown {
  const copy = structuredClone(doc);
  for (const field of index.def.fields) {
    if (field.type !== "TEXT") continue;
    const parts = field.source.split(".");
    const last = parts.pop() as string;
    let node: unknown = copy;
    for (const p of parts)
      node =
        typeof node === "object" && node !== null
          ? (node as Record<string, unknown>)[p]
          : undefined;
    if (typeof node !== "object" || node === null) continue;
    const holder = node as Record<string, unknown>;
    if (typeof holder[last] === "string") holder[last] = marks(field.name, holder[last]);
  }
  return copy;
}

/** A value as the reply's text: strings as they are, everything else as JSON. */
function text(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}
