/**
 * A database's data size as the summary gives it (src/admin/console/kv-data-size.ts): Redis's
 * used memory against its limit (null: none set), or why it is not known.
 */
export type DataSize = { used: number; limit: number | null; evicts?: true } | { unknown: string };

/** From this share of its limit a database shows amber. */
const WARN_AT = 0.8;
/**
 * From this share it shows red, full. Not 100 %: Redis refuses a write when its memory passes the
 * limit, counting what it holds for a while besides the data (the buffers of requests being
 * read, a hash table's old buckets while it grows), so a database whose writes were just refused
 * rests somewhat under it once those are freed: 99.0 % for an 8 MiB one filled with 4 KiB values.
 */
export const FULL_AT = 0.98;

/**
 * How full a database is: no limit, under WARN_AT, nearly full, full, not known, or a cache that
 * evicts keys at its limit (`evicts`: being near it is how a cache runs, not a warning).
 */
export type DataLevel = "none" | "ok" | "warn" | "full" | "unknown" | "evicts";

export function dataLevel(d: DataSize | undefined): DataLevel {
  if (d === undefined || "unknown" in d) return "unknown";
  if (d.limit === null) return "none";
  if (d.evicts) return "evicts";
  const share = d.used / d.limit;
  return share >= FULL_AT ? "full" : share >= WARN_AT ? "warn" : "ok";
}
