import SearchableMap from "minisearch/SearchableMap";
import { analyze } from "./analyzer.js";
import type { FieldValues } from "./documents.js";
import type { FieldDef, IndexDef } from "./schema.js";
import type { Deadline } from "./deadline.js";
import { SearchError } from "./errors.js";
import type { Steps } from "./scheduler.js";
import { sortSteps } from "./sort-steps.js";

/**
 * One index's derived state in this process's memory (docs/decisions.md, "Search index"):
 * documents by key, and per field either postings with positions (TEXT: term → doc → positions,
 * plus a radix-tree term dictionary from MiniSearch for fuzzy and prefix look-ups) or the values
 * (every other type: doc → values). Rebuilt from Redis at start; never the source of truth.
 */
export type DocId = number;
/**
 * A term's positions in one document: a bare number when it occurs once (most terms), which
 * saves an array object per posting (measured: ~30 % of the index's heap, docs/decisions.md).
 */
export type Positions = number | number[];

export const positionList = (p: Positions): number[] => (typeof p === "number" ? [p] : p);
export const termFrequency = (p: Positions): number => (typeof p === "number" ? 1 : p.length);

export class TextColumn {
  readonly postings = new Map<string, Map<DocId, Positions>>();
  /** The terms, for fuzzy and prefix look-ups (set once per term: a radix-tree walk costs). */
  readonly dictionary = new SearchableMap<true>();
  readonly lengths = new Map<DocId, number>();
  totalLength = 0;

  add(doc: DocId, values: FieldValues, field: FieldDef, def: IndexDef): string[] {
    const positions = new Map<string, number[]>();
    let offset = 0;
    for (const value of values) {
      // Values of a multi-valued field are kept apart by a gap of 100 positions (no phrase spans two).
      const tokens = analyze(String(value), field, def.language);
      for (const token of tokens) {
        let list = positions.get(token.term);
        if (list === undefined) positions.set(token.term, (list = []));
        list.push(offset + token.position);
      }
      offset += tokens.length + 100;
    }
    let count = 0;
    for (const [term, list] of positions) {
      let docs = this.postings.get(term);
      if (docs === undefined) {
        this.postings.set(term, (docs = new Map()));
        this.dictionary.set(term, true);
      }
      docs.set(doc, list.length === 1 ? (list[0] as number) : list);
      count += list.length;
    }
    this.lengths.set(doc, count);
    this.totalLength += count;
    return [...positions.keys()];
  }

  remove(doc: DocId, terms: readonly string[]): void {
    for (const term of terms) {
      const docs = this.postings.get(term);
      if (docs === undefined) continue;
      docs.delete(doc);
      if (docs.size === 0) {
        this.postings.delete(term);
        this.dictionary.delete(term);
      }
    }
    this.totalLength -= this.lengths.get(doc) ?? 0;
    this.lengths.delete(doc);
  }

  averageLength(documents: number): number {
    return documents === 0 ? 1 : Math.max(1, this.totalLength / documents);
  }
}

/**
 * A non-TEXT field's values per document, and a sorted view of them for range filters (built on
 * the first range query after a change: O(n log n) once, then binary searches).
 */
export class ValueColumn {
  readonly values = new Map<DocId, FieldValues>();
  private view: { values: (string | number)[]; docs: DocId[] } | undefined;
  /** Counts changes: a view sorted while the column changed is used once, not kept. */
  private version = 0;

  set(doc: DocId, values: FieldValues): void {
    this.values.set(doc, values);
    this.view = undefined;
    this.version++;
  }

  delete(doc: DocId): void {
    if (this.values.delete(doc)) {
      this.view = undefined;
      this.version++;
    }
  }

  /** Every (value, document) pair, by value ascending (sorted a slice at a time). */
  *sorted(deadline: Deadline): Steps<{ values: (string | number)[]; docs: DocId[] }> {
    if (this.view) return this.view;
    const version = this.version;
    const pairs: [string | number, DocId][] = [];
    for (const [doc, vs] of this.values) {
      if (deadline.tick()) yield;
      for (const v of vs) pairs.push([v, doc]);
    }
    yield* sortSteps(pairs, ([a], [b]) => (a < b ? -1 : a > b ? 1 : 0), deadline);
    const view = { values: pairs.map(([v]) => v), docs: pairs.map(([, d]) => d) };
    if (version === this.version) this.view = view;
    return view;
  }
}

export class MemoryIndex {
  private readonly ids = new Map<string, DocId>();
  private readonly keysById = new Map<DocId, string>();
  private readonly terms = new Map<DocId, Map<string, string[]>>();
  private nextId = 0;
  readonly text = new Map<string, TextColumn>();
  readonly columns = new Map<string, ValueColumn>();

  constructor(
    readonly def: IndexDef,
    readonly maxDocuments: number,
  ) {
    for (const field of def.fields) {
      if (field.type === "TEXT") this.text.set(field.name, new TextColumn());
      else this.columns.set(field.name, new ValueColumn());
    }
  }

  get size(): number {
    return this.ids.size;
  }

  has(key: string): boolean {
    return this.ids.has(key);
  }

  keyOf(doc: DocId): string | undefined {
    return this.keysById.get(doc);
  }

  allDocs(): IterableIterator<DocId> {
    return this.keysById.keys();
  }

  keys(): IterableIterator<string> {
    return this.ids.keys();
  }

  /** Puts (or replaces) a document; throws SearchError past the index's document limit. */
  put(key: string, values: Map<string, FieldValues>): void {
    this.remove(key);
    if (this.ids.size >= this.maxDocuments) {
      throw new SearchError(
        `ERR search index '${this.def.name}' is full: at most ${this.maxDocuments} documents (STASHD_SEARCH_MAX_DOCUMENTS)`,
      );
    }
    const doc = this.nextId++;
    this.ids.set(key, doc);
    this.keysById.set(doc, key);
    const docTerms = new Map<string, string[]>();
    for (const field of this.def.fields) {
      const v = values.get(field.name);
      if (v === undefined) continue;
      const column = this.text.get(field.name);
      if (column) docTerms.set(field.name, column.add(doc, v, field, this.def));
      else this.columns.get(field.name)?.set(doc, v);
    }
    this.terms.set(doc, docTerms);
  }

  remove(key: string): void {
    const doc = this.ids.get(key);
    if (doc === undefined) return;
    this.ids.delete(key);
    this.keysById.delete(doc);
    for (const [field, terms] of this.terms.get(doc) ?? [])
      this.text.get(field)?.remove(doc, terms);
    for (const column of this.columns.values()) column.delete(doc);
    this.terms.delete(doc);
  }

  field(name: string): FieldDef {
    const field = this.def.fields.find((f) => f.name === name);
    if (field === undefined)
      throw new SearchError(`ERR unknown field '${name}' in index '${this.def.name}'`);
    return field;
  }
}
