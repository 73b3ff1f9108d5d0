import { isAscii } from "node:buffer";
import { EncodedCommands } from "../../shared/redis/resp.js";
import { skipSpace } from "../parse/body-args.js";

/**
 * The usual `/pipeline` body, `[["GET","k"],["SET","k","v"],…]` (ASCII, every argument a string
 * without escapes), encoded straight from its bytes into the RESP Redis gets, in one pass: each
 * argument's bytes are checked and copied in the same loop, with no string or array per argument
 * and no second pass over them (docs/decisions.md, "A pipeline body encoded straight into RESP").
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
 * The RESP of a body is at most twice its size plus a little: an argument of n bytes takes at
 * least n + 3 in the body (its quotes and the `,` or `]` after it) and n + 5 + digits(n) in RESP,
 * at most 2(n + 3); a command's `*N\r\n` (3 + digits(N) bytes) is paid by its `[`, `]` and its N
 * arguments' share beyond that. Three times leaves room for the header written before its length
 * is known (see writeHeader) and is checked once at the end all the same.
 */
const MAX_OUT = 3 * MAX_BODY + 64;
/** Where the RESP is written before it is copied out at its size (allocated on first use). */
let scratch: Buffer | undefined;

const CR = 0x0d;
const LF = 0x0a;
const QUOTE = 0x22;
const COMMA = 0x2c;
const OPEN = 0x5b; // [
const CLOSE = 0x5d; // ]

/**
 * The body as RESP, or undefined (see EncodedPipeline); at most `maxCommands` commands.
 *
 * One loop with its positions in local variables: the same scan split into functions sharing a
 * cursor object measured twice as slow (docs/decisions.md, "A pipeline body encoded straight
 * into RESP"). Each command's `*N\r\n` and each argument's `$N\r\n` are written before N is
 * known, with room for one digit; writeHeader makes room for more.
 */
export function encodePipelineBody(body: Buffer, maxCommands: number): EncodedPipeline | undefined {
  if (body.length > MAX_BODY || !isAscii(body)) return undefined;
  const out = (scratch ??= Buffer.allocUnsafeSlow(MAX_OUT));
  const end = body.length;
  const names: string[] = [];
  let at = skipSpace(body, 0);
  if (body[at] !== OPEN) return undefined;
  at = skipSpace(body, at + 1);
  let w = 0;
  let commands = 0;
  let lastName = -1; // where the last name in `names` is in the body, and its length
  let lastLength = 0;
  for (;;) {
    if (commands === maxCommands || body[at] !== OPEN) return undefined;
    const command = w;
    w += 4;
    at = skipSpace(body, at + 1);
    const name = at + 1;
    let nameLength = 0;
    let argc = 0;
    for (;;) {
      if (body[at] !== QUOTE) return undefined;
      const arg = w;
      w += 4;
      let i = at + 1;
      for (;;) {
        if (i === end) return undefined;
        const b = body[i] as number;
        if (b === QUOTE) break;
        if (b < 0x20 || b === 0x5c) return undefined; // a control character, or `\`
        out[w++] = b;
        i++;
      }
      w = writeHeader(out, arg, w, 0x24, i - at - 1); // $
      out[w++] = CR;
      out[w++] = LF;
      if (argc++ === 0) nameLength = i - name;
      at = skipSpace(body, i + 1);
      if (body[at] === CLOSE) break;
      if (body[at] !== COMMA) return undefined;
      at = skipSpace(body, at + 1);
    }
    w = writeHeader(out, command, w, 0x2a, argc); // *
    commands++;
    if (nameLength !== lastLength || !sameBytes(body, name, lastName, nameLength)) {
      names.push(body.toString("latin1", name, name + nameLength));
      lastName = name;
      lastLength = nameLength;
    }
    at = skipSpace(body, at + 1);
    if (body[at] === CLOSE) break;
    if (body[at] !== COMMA) return undefined;
    at = skipSpace(body, at + 1);
  }
  if (skipSpace(body, at + 1) !== end || w > out.length) return undefined;
  const bytes = Buffer.allocUnsafe(w);
  out.copy(bytes, 0, 0, w);
  return { commands: new EncodedCommands(bytes, commands), names };
}

/**
 * Writes `${type}${n}\r\n` at `head`, where 4 bytes were left for it before the bytes up to `end`
 * were written; with more than one digit those bytes move on to make room (writeLongHeader).
 * Returns the new end.
 *
 * Kept this small so V8 inlines it and every skipSpace call into encodePipelineBody: with the
 * long case inline, its size used up the inlining budget and two or three of the six skipSpace
 * calls stayed calls (a 100-GET body: 7.0 µs, 6.2 with the split; docs/decisions.md).
 */
function writeHeader(out: Buffer, head: number, end: number, type: number, n: number): number {
  out[head] = type;
  if (n < 10) {
    out[head + 1] = 0x30 + n;
    out[head + 2] = CR;
    out[head + 3] = LF;
    return end;
  }
  return writeLongHeader(out, head, end, n);
}

/** writeHeader's case of n >= 10, the type byte already written. */
function writeLongHeader(out: Buffer, head: number, end: number, n: number): number {
  let digits = 1;
  for (let rest = n; rest >= 10; rest = Math.floor(rest / 10)) digits++;
  const shift = digits - 1;
  // A JS loop for a few bytes, the native copy (one call's fixed cost) for more.
  if (end - head - 4 > 64) out.copyWithin(head + 4 + shift, head + 4, end);
  else for (let i = end - 1; i >= head + 4; i--) out[i + shift] = out[i] as number;
  end += shift;
  for (let i = head + digits, rest = n; i > head; i--, rest = Math.floor(rest / 10))
    out[i] = 0x30 + (rest % 10);
  out[head + digits + 1] = CR;
  out[head + digits + 2] = LF;
  return end;
}

/** Whether `body[a, a + n)` and `body[b, b + n)` hold the same bytes (b < 0: no bytes there). */
function sameBytes(body: Buffer, a: number, b: number, n: number): boolean {
  if (b < 0) return false;
  for (let i = 0; i < n; i++) if (body[a + i] !== body[b + i]) return false;
  return true;
}
