import { AppError } from "../../shared/errors.js";

/**
 * Cursors of `GET /v2/events` and `GET /v2/logs` (docs/qstash-protocol.md §2.9).
 *
 * qstash-js documents its log loop as `let cursor = Date.now(); while (cursor > 0) { const res =
 * await client.logs({ cursor }); …; cursor = res.cursor ?? 0 }`: the first request sends a time in
 * milliseconds, and the loop goes on only while the cursor it gets back compares above 0 as a
 * number, so a cursor must be all digits (a `<ms>-<n>` stream id is NaN to `>` and ends the loop
 * after one page). The cursor handed out is therefore a decimal number:
 *
 *   `<ms, at least 13 digits><seq><partition, 2 digits><length of seq, 2 digits>`
 *
 * for stream id `<ms>-<seq>`: exact for every id (read from the right), and never shorter than
 * 18 digits, so it cannot be taken for a time. It is a string and must go back as one: as a JS number it would lose digits
 * (the SDK's own type comment says so). Accepted:
 *
 * - that form, and the earlier `<ms>-<seq>` and `<ms>-<seq>~<partition>` stream-id forms: the
 *   listing continues after that entry;
 * - up to 16 digits: a time in Unix milliseconds: the listing starts at that millisecond, its
 *   entries included (at or before it newest first, at or after it with `earliestFirst`).
 */
export type LogPosition =
  /** After stream id `id` of partition `part` (-1: after it in every partition). */
  | { kind: "after"; id: string; part: number }
  /** From millisecond `ms` on, inclusive, in every partition. */
  | { kind: "time"; ms: string };

const STREAM_ID = /^(\d{1,20})-(\d{1,20})(?:~(\d{1,2}))?$/;
const DIGITS = /^\d+$/;
/** The longest plain time accepted (Date.now() has 13 digits until the year 2286). */
const MAX_TIME_DIGITS = 16;
/** Digits of the partition and of the seq's length at the end of a numeric cursor. */
const PART_DIGITS = 2;
/** The ms part is written with at least this many digits (a Date.now() has 13). */
const MS_DIGITS = 13;
const LENGTH_DIGITS = 2;

/** The numeric cursor of stream entry `id` (`<ms>-<seq>`) of partition `part`. */
export function encodeLogCursor(id: string, part: number): string {
  const [ms = "0", seq = "0"] = id.split("-");
  return `${ms.padStart(MS_DIGITS, "0")}${seq}${pad(part, PART_DIGITS)}${pad(seq.length, LENGTH_DIGITS)}`;
}

/** The position a cursor stands for; 400 `invalid cursor` for anything else. */
export function parseLogCursor(raw: string): LogPosition {
  const stream = STREAM_ID.exec(raw);
  if (stream) {
    const [, ms = "", seq = "", part] = stream;
    return { kind: "after", id: `${ms}-${seq}`, part: part === undefined ? -1 : Number(part) };
  }
  if (!DIGITS.test(raw)) throw invalid(raw);
  if (raw.length <= MAX_TIME_DIGITS) return { kind: "time", ms: String(BigInt(raw)) };
  return decodeNumeric(raw);
}

function decodeNumeric(raw: string): LogPosition {
  const seqLength = Number(raw.slice(-LENGTH_DIGITS));
  const part = Number(raw.slice(-(LENGTH_DIGITS + PART_DIGITS), -LENGTH_DIGITS));
  const head = raw.slice(0, -(LENGTH_DIGITS + PART_DIGITS));
  const msLength = head.length - seqLength;
  if (seqLength < 1 || seqLength > 20 || msLength < 1 || msLength > 20) throw invalid(raw);
  const ms = String(BigInt(head.slice(0, msLength)));
  return { kind: "after", id: `${ms}-${head.slice(msLength)}`, part };
}

function pad(n: number, digits: number): string {
  return String(n).padStart(digits, "0");
}

function invalid(raw: string): AppError {
  return new AppError("bad_request", `invalid cursor: ${raw}`);
}
