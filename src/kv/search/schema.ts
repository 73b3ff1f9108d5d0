import { randomUUID } from "node:crypto";
import type { Arg } from "../../shared/redis/resp.js";
import { LANGUAGES, type Language } from "./analyzer.js";
import { SearchError } from "./errors.js";

/**
 * An index definition as SEARCH.CREATE gives it (docs/search.md, "SEARCH.CREATE"), and its form
 * stored in Redis (JSON in the definitions hash, sync.ts). `id` is new at each creation, so a
 * process that sees another id under the same name knows the index was dropped and made again.
 */
export const FIELD_TYPES = [
  "TEXT",
  "U64",
  "I64",
  "F64",
  "BOOL",
  "DATE",
  "KEYWORD",
  "FACET",
] as const;
export type FieldType = (typeof FIELD_TYPES)[number];
export type DataType = "HASH" | "JSON" | "STRING";

export interface FieldDef {
  /** The name queries use (a dotted path for nested JSON fields). */
  readonly name: string;
  readonly type: FieldType;
  /** Where the value is read in the document: `from`, or the name itself. */
  readonly source: string;
  readonly fast: boolean;
  readonly noTokenize: boolean;
  readonly noStem: boolean;
  readonly from?: string | undefined;
}

export interface IndexDef {
  readonly id: string;
  readonly name: string;
  readonly dataType: DataType;
  readonly prefixes: readonly string[];
  readonly language: Language;
  readonly fields: readonly FieldDef[];
  readonly skipInitialScan: boolean;
}

const NUMERIC: ReadonlySet<FieldType> = new Set(["U64", "I64", "F64"]);
export const isNumeric = (t: FieldType): boolean => NUMERIC.has(t);
/** Types whose FAST flag is implied (numbers are always fast at Upstash: the SDK sends FAST). */
const FAST_OPTION: ReadonlySet<FieldType> = new Set([...NUMERIC, "BOOL", "DATE", "KEYWORD"]);

const MAX_FIELDS = 256;
const MAX_PREFIXES = 64;

/** Reads `argv` of SEARCH.CREATE (without the command name): throws SearchError on bad input. */
export function parseCreate(args: readonly Arg[]): { def: IndexDef; existsOk: boolean } {
  const words = new Words(args);
  const name = words.next("index name");
  let existsOk = false;
  let skipInitialScan = false;
  let dataType: DataType | undefined;
  let prefixes: string[] = [];
  let language: Language = "english";
  for (;;) {
    const word = words.next("SCHEMA").toUpperCase();
    if (word === "SCHEMA") break;
    if (word === "EXISTSOK") existsOk = true;
    else if (word === "SKIPINITIALSCAN") skipInitialScan = true;
    else if (word === "ON") dataType = parseDataType(words.next("data type"));
    else if (word === "PREFIX") prefixes = parsePrefixes(words);
    else if (word === "LANGUAGE") language = parseLanguage(words.next("language"));
    else throw new SearchError(`ERR unknown SEARCH.CREATE option '${word}'`);
  }
  if (dataType === undefined) throw new SearchError("ERR SEARCH.CREATE needs ON HASH|JSON|STRING");
  if (prefixes.length === 0) throw new SearchError("ERR SEARCH.CREATE needs PREFIX n prefix…");
  const fields = parseFields(words, dataType);
  const def = { id: randomUUID(), name, dataType, prefixes, language, fields, skipInitialScan };
  return { def, existsOk };
}

function parseDataType(word: string): DataType {
  const upper = word.toUpperCase();
  if (upper === "HASH" || upper === "JSON" || upper === "STRING") return upper;
  throw new SearchError(`ERR unknown data type '${word}': use HASH, JSON or STRING`);
}

function parsePrefixes(words: Words): string[] {
  const count = Number(words.next("prefix count"));
  if (!Number.isInteger(count) || count < 1 || count > MAX_PREFIXES) {
    throw new SearchError(`ERR PREFIX needs a count from 1 to ${MAX_PREFIXES}`);
  }
  return Array.from({ length: count }, () => words.next("prefix"));
}

function parseLanguage(word: string): Language {
  const lower = word.toLowerCase();
  if ((LANGUAGES as readonly string[]).includes(lower)) return lower as Language;
  throw new SearchError(`ERR unsupported language '${word}'`);
}

function parseFields(words: Words, dataType: DataType): FieldDef[] {
  const fields: FieldDef[] = [];
  while (words.more()) {
    const name = words.next("field name");
    const type = words.next("field type").toUpperCase() as FieldType;
    if (!FIELD_TYPES.includes(type)) {
      throw new SearchError(`ERR unknown field type '${type}' for field '${name}'`);
    }
    const options = {
      fast: false,
      noTokenize: false,
      noStem: false,
      from: undefined as string | undefined,
    };
    for (;;) {
      const opt = words.peek()?.toUpperCase();
      if (opt === "FAST") options.fast = true;
      else if (opt === "NOTOKENIZE") options.noTokenize = true;
      else if (opt === "NOSTEM") options.noStem = true;
      else if (opt === "FROM") {
        words.next("FROM");
        options.from = words.peek();
      } else break;
      words.next(opt === "FROM" ? "FROM field" : opt);
    }
    checkField(name, type, options, dataType);
    if (fields.some((f) => f.name === name)) throw new SearchError(`ERR duplicate field '${name}'`);
    const fast = options.fast || isNumeric(type);
    fields.push({ name, type, source: options.from ?? name, ...options, fast });
  }
  if (fields.length === 0) throw new SearchError("ERR SCHEMA needs at least one field");
  if (fields.length > MAX_FIELDS) throw new SearchError(`ERR at most ${MAX_FIELDS} fields`);
  return fields;
}

function checkField(
  name: string,
  type: FieldType,
  options: { fast: boolean; noTokenize: boolean; noStem: boolean; from?: string | undefined },
  dataType: DataType,
): void {
  if ((options.noTokenize || options.noStem) && type !== "TEXT") {
    throw new SearchError(`ERR NOTOKENIZE and NOSTEM apply to TEXT fields only ('${name}')`);
  }
  if (options.fast && !FAST_OPTION.has(type)) {
    throw new SearchError(`ERR FAST does not apply to ${type} fields ('${name}')`);
  }
  if (dataType === "HASH" && (options.from ?? name).includes(".")) {
    throw new SearchError(`ERR HASH indexes take flat fields only ('${name}')`);
  }
}

/** The arguments of a command, read in order, each missing one an error naming what was due. */
export class Words {
  private at = 0;
  constructor(private readonly args: readonly Arg[]) {}
  more(): boolean {
    return this.at < this.args.length;
  }
  peek(): string | undefined {
    return this.args[this.at]?.toString();
  }
  next(what: string): string {
    const arg = this.args[this.at++];
    if (arg === undefined) throw new SearchError(`ERR syntax error: ${what} expected`);
    return arg.toString();
  }
}

/** Whether two definitions index the same way (EXISTSOK answers 0 then, an error otherwise). */
export function sameDefinition(a: IndexDef, b: IndexDef): boolean {
  const shape = (d: IndexDef) => JSON.stringify([d.dataType, d.prefixes, d.language, d.fields]);
  return shape(a) === shape(b);
}

/** Whether a key belongs to the index by its prefixes. */
export function coversKey(def: IndexDef, key: string): boolean {
  return def.prefixes.some((p) => key.startsWith(p));
}

/** SEARCH.DESCRIBE's reply as plain values (reply.ts turns them into RESP). */
export function describe(def: IndexDef, documents: number): unknown[] {
  const schema = def.fields.map((f) => [
    f.name,
    f.type,
    ...(f.noTokenize ? ["NOTOKENIZE"] : []),
    ...(f.noStem ? ["NOSTEM"] : []),
    ...(f.fast ? ["FAST"] : []),
    ...(f.from !== undefined ? ["FROM", f.from] : []),
  ]);
  return [
    "name",
    def.name,
    "type",
    def.dataType,
    "prefixes",
    [...def.prefixes],
    "language",
    def.language,
    "schema",
    schema,
    "documents",
    documents,
  ];
}
