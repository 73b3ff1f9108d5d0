import type { Reply } from "../../shared/redis/resp.js";
import type { DataType, FieldDef, IndexDef } from "./schema.js";

/**
 * A document as read from Redis (`source`), and its indexed values per schema field. HASH keys
 * are read with HGETALL, JSON and STRING keys with GET (JSON.GET on a Redis with the module):
 * a STRING whose value is not a JSON object is not a document of the index.
 */
export type Source =
  { kind: "hash"; fields: Map<string, string> } | { kind: "json"; value: unknown };

/** One field's values: strings for TEXT, KEYWORD and FACET; numbers for the others. */
export type FieldValues = readonly (string | number)[];

/** Parses a GET/HGETALL/JSON.GET reply into a Source; undefined when the key is not a document. */
export function sourceOf(dataType: DataType, reply: Reply): Source | undefined {
  if (dataType === "HASH") {
    if (reply.kind !== "array" || reply.value.length === 0) return undefined;
    const fields = new Map<string, string>();
    for (let i = 0; i + 1 < reply.value.length; i += 2) {
      const k = reply.value[i];
      const v = reply.value[i + 1];
      if (k?.kind === "bulk" && v?.kind === "bulk")
        fields.set(k.value.toString(), v.value.toString());
    }
    return { kind: "hash", fields };
  }
  if (reply.kind !== "bulk") return undefined;
  try {
    const value: unknown = JSON.parse(reply.value.toString());
    // JSON.GET with the module wraps a `$` read in an array; a plain GET does not.
    const doc = Array.isArray(value) && value.length === 1 ? (value[0] as unknown) : value;
    return typeof doc === "object" && doc !== null && !Array.isArray(doc)
      ? { kind: "json", value: doc }
      : undefined;
  } catch {
    return undefined;
  }
}

/** The raw values at a dotted path: arrays on the way are flattened (multi-valued fields). */
export function rawValues(source: Source, path: string): unknown[] {
  if (source.kind === "hash") {
    const v = source.fields.get(path);
    return v === undefined ? [] : [v];
  }
  let level: unknown[] = [source.value];
  for (const part of path.split(".")) {
    const next: unknown[] = [];
    for (const node of level.flatMap((n) => (Array.isArray(n) ? (n as unknown[]) : [n]))) {
      if (typeof node === "object" && node !== null && part in node) {
        next.push((node as Record<string, unknown>)[part]);
      }
    }
    level = next;
  }
  return level.flatMap((n) => (Array.isArray(n) ? (n as unknown[]) : [n]));
}

/** Values of one field, converted to its type; values of the wrong type are left out. */
export function fieldValues(source: Source, field: FieldDef): FieldValues {
  const out: (string | number)[] = [];
  for (const raw of rawValues(source, field.source)) {
    const value = convert(raw, field);
    if (value !== undefined) out.push(value);
  }
  return out;
}

/** A value in the field's indexed form: TEXT/KEYWORD/FACET strings, numbers, BOOL 0/1, DATE ms. */
export function convert(raw: unknown, field: FieldDef): string | number | undefined {
  switch (field.type) {
    case "TEXT":
    case "KEYWORD":
    case "FACET":
      return typeof raw === "string" ? raw : typeof raw === "number" ? String(raw) : undefined;
    case "BOOL":
      return raw === true || raw === "true" ? 1 : raw === false || raw === "false" ? 0 : undefined;
    case "DATE":
      return dateValue(raw);
    default:
      return numberValue(raw, field);
  }
}

function numberValue(raw: unknown, field: FieldDef): number | undefined {
  const n =
    typeof raw === "number"
      ? raw
      : typeof raw === "string" && raw.trim() !== ""
        ? Number(raw)
        : NaN;
  if (!Number.isFinite(n)) return undefined;
  if (field.type === "U64" && (n < 0 || !Number.isInteger(n))) return undefined;
  if (field.type === "I64" && !Number.isInteger(n)) return undefined;
  return n;
}

/** Epoch milliseconds of an RFC 3339 date (or a number of milliseconds). */
export function dateValue(raw: unknown): number | undefined {
  if (typeof raw === "number" && Number.isFinite(raw)) return raw;
  if (typeof raw !== "string") return undefined;
  const ms = Date.parse(raw);
  return Number.isFinite(ms) ? ms : undefined;
}

/** Every schema field's values of a document. */
export function indexedValues(def: IndexDef, source: Source): Map<string, FieldValues> {
  const out = new Map<string, FieldValues>();
  for (const field of def.fields) {
    const values = fieldValues(source, field);
    if (values.length > 0) out.set(field.name, values);
  }
  return out;
}
