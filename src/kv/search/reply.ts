import type { Reply } from "../../shared/redis/resp.js";

/**
 * Plain values as RESP replies, the way Upstash's search commands answer: strings as bulk
 * strings, integers as integers, other numbers as bulk strings of their decimal form (RESP2 has
 * no doubles; the SDK parses them back), null as nil, arrays as arrays.
 */
export type Plain = string | number | boolean | null | undefined | readonly Plain[];

export function toReply(value: Plain): Reply {
  if (value === null || value === undefined) return { kind: "nil", array: false };
  if (Array.isArray(value)) return { kind: "array", value: value.map((v: Plain) => toReply(v)) };
  if (typeof value === "number") {
    return Number.isSafeInteger(value)
      ? { kind: "int", value: String(value) }
      : { kind: "bulk", value: Buffer.from(formatNumber(value)) };
  }
  if (typeof value === "boolean") return { kind: "int", value: value ? "1" : "0" };
  return { kind: "bulk", value: Buffer.from(value as string) };
}

/** A number as text: integers without a fraction, others as JavaScript prints them. */
export function formatNumber(n: number): string {
  return Number.isFinite(n) ? String(n) : n > 0 ? "inf" : n < 0 ? "-inf" : "nan";
}

export const errorReply = (value: string): Reply => ({ kind: "error", value });
