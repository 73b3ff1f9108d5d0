import { isAscii } from "node:buffer";
import { encodeRanges, type EncodedCommands } from "../../shared/redis/resp.js";
import { skipSpace, stringEnd } from "../parse/body-args.js";

/**
 * The usual `/pipeline` body, `[["GET","k"],["SET","k","v"],…]` (ASCII, every argument a string
 * without escapes), encoded straight from its bytes into the RESP Redis gets: no string or array
 * per argument, and no encoding pass over them afterwards. On a pipeline of 100 GETs that is
 * about a third of reading the body into commands and encoding them (docs/benchmarks-log.md, "KV
 * pipeline encoded from its body, 2026-11-27").
 *
 * The bytes between a JSON string's quotes are its value when it has no escape and the body is
 * ASCII, so Redis gets exactly the arguments the general path (body-args.ts, then
 * encodeCommands) would send. Anything else (numbers, booleans, escapes, other bytes, an empty
 * command, invalid JSON, too many commands) gives undefined: the caller takes the general path,
 * which gives the answer or error it always gave.
 */
export interface EncodedPipeline {
  readonly commands: EncodedCommands;
  /** The command names, each run of equal names once, in order (GET GET SET GET: GET SET GET). */
  readonly names: readonly string[];
}

/** Bodies up to this size only (body-args.ts reads larger ones in slices). */
const MAX_BODY = 64 * 1024;
/**
 * Argument byte ranges (start, end) and arguments per command, reused by every call: nothing
 * awaits between the scan and the encoding. An argument takes at least 3 body bytes (`"",`).
 */
const ranges = new Int32Array(2 * Math.ceil(MAX_BODY / 3) + 2);
let argCounts = new Int32Array(1024);

/** The body as RESP, or undefined (see EncodedPipeline); at most `maxCommands` commands. */
export function encodePipelineBody(body: Buffer, maxCommands: number): EncodedPipeline | undefined {
  if (body.length > MAX_BODY || !isAscii(body)) return undefined;
  if (argCounts.length < maxCommands) argCounts = new Int32Array(maxCommands);
  const names: string[] = [];
  let at = skipSpace(body, 0);
  if (body[at] !== 0x5b) return undefined; // [
  at = skipSpace(body, at + 1);
  let commands = 0;
  let args = 0;
  for (;;) {
    if (commands === maxCommands || body[at] !== 0x5b) return undefined;
    const first = args;
    at = scanCommand(body, at + 1, commands, first);
    if (at < 0) return undefined;
    args += argCounts[commands++] as number;
    nameRun(body, names, first);
    at = skipSpace(body, at);
    const next = body[at];
    if (next === 0x5d) break; // ]
    if (next !== 0x2c) return undefined; // ,
    at = skipSpace(body, at + 1);
  }
  if (skipSpace(body, at + 1) !== body.length) return undefined;
  return { commands: encodeRanges(body, ranges, argCounts, commands), names };
}

/**
 * Command number `command`'s strings, from after its `[`: their ranges stored from argument
 * number `first` on, their count in argCounts. Returns the position after its `]`, or -1 for
 * anything but a non-empty array of unescaped strings.
 */
function scanCommand(body: Buffer, at: number, command: number, first: number): number {
  let k = first * 2;
  const start = k;
  at = skipSpace(body, at);
  for (;;) {
    if (body[at] !== 0x22) return -1; // "
    const end = stringEnd(body, at + 1);
    // The scratch fits every body up to MAX_BODY; this guards a later change of either.
    if (end < 0 || k + 2 > ranges.length) return -1;
    ranges[k++] = at + 1;
    ranges[k++] = end;
    at = skipSpace(body, end + 1);
    const next = body[at];
    if (next === 0x5d) {
      argCounts[command] = (k - start) / 2;
      return at + 1;
    }
    if (next !== 0x2c) return -1;
    at = skipSpace(body, at + 1);
  }
}

/** Adds the name of the command whose first argument is argument `first`, unless it repeats. */
function nameRun(body: Buffer, names: string[], first: number): void {
  const from = ranges[first * 2] as number;
  const to = ranges[first * 2 + 1] as number;
  const last = names[names.length - 1];
  if (last !== undefined && last.length === to - from && sameText(body, from, last)) return;
  names.push(body.toString("latin1", from, to));
}

function sameText(body: Buffer, from: number, text: string): boolean {
  for (let i = 0; i < text.length; i++) if (body[from + i] !== text.charCodeAt(i)) return false;
  return true;
}
