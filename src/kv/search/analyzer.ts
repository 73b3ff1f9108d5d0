import snowball from "snowball-stemmers";
import type { FieldDef } from "./schema.js";

/**
 * How TEXT is cut into terms (docs/search.md, "Text analysis"): runs of letters, digits and
 * combining marks, lower-cased, each CJK ideograph or kana its own token (no dictionary
 * segmentation), tokens over MAX_TOKEN characters dropped; then the language's Snowball stemmer
 * (the `snowball-stemmers` package) unless the field says NOSTEM. NOTOKENIZE keeps the whole
 * value as one lower-cased term.
 */
export const LANGUAGES = [
  "english",
  "french",
  "spanish",
  "portuguese",
  "italian",
  "german",
  "dutch",
  "swedish",
  "norwegian",
  "danish",
  "finnish",
  "hungarian",
  "russian",
  "romanian",
  "turkish",
  "arabic",
  "chinese",
  "japanese",
] as const;
export type Language = (typeof LANGUAGES)[number];

/** Longer tokens are dropped, as Tantivy's default analyzer drops tokens over 40 bytes. */
export const MAX_TOKEN = 64;

export interface Token {
  readonly term: string;
  /** Character offsets in the original text (for highlighting). */
  readonly start: number;
  readonly end: number;
  /** The token's index among the field value's tokens (for phrases). */
  readonly position: number;
}

const WORD = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]|[\p{L}\p{N}\p{M}]+/gu;
const CJK = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]$/u;

type Stem = (word: string) => string;
const stemmers = new Map<Language, Stem>();
/** Stems memoised per language: the Snowball port costs ~20 µs a word, a Map hit well under 1. */
const MEMO_LIMIT = 200_000;

function stemmerFor(language: Language): Stem {
  let stem = stemmers.get(language);
  if (stem === undefined) {
    const known = (snowball.algorithms() as string[]).includes(language);
    const stemmer = known ? snowball.newStemmer(language) : undefined;
    const memo = new Map<string, string>();
    stem = (w) => {
      let s = memo.get(w);
      if (s === undefined) {
        s = stemmer ? stemmer.stem(w) : w;
        if (memo.size >= MEMO_LIMIT) memo.clear();
        memo.set(w, s);
      }
      return s;
    };
    stemmers.set(language, stem);
  }
  return stem;
}

/** The terms of one field value, with offsets and positions. */
export function analyze(text: string, field: FieldDef, language: Language): Token[] {
  if (field.noTokenize) {
    const term = text.toLowerCase();
    return term === "" ? [] : [{ term, start: 0, end: text.length, position: 0 }];
  }
  const stem = field.noStem ? undefined : stemmerFor(language);
  const tokens: Token[] = [];
  for (const match of text.matchAll(WORD)) {
    const word = match[0];
    if (word.length > MAX_TOKEN) continue;
    const lower = word.toLowerCase();
    const term = stem && !CJK.test(word) ? stem(lower) : lower;
    tokens.push({
      term,
      start: match.index,
      end: match.index + word.length,
      position: tokens.length,
    });
  }
  return tokens;
}

/** The terms of a query value, analysed as the field's values are. */
export function queryTerms(text: string, field: FieldDef, language: Language): string[] {
  return analyze(text, field, language).map((t) => t.term);
}
