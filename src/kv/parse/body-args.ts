import { isAscii } from "node:buffer";
import { AppError } from "../../shared/errors.js";

/**
 * The command-in-the-body form (beside url-args.ts, the command in the path): a lossless reader
 * for JSON command bodies, `["SET","k",1e3,true]` and `[["GET","k"],…]`.
 *
 * `JSON.parse` would turn `9007199254740993` into `9007199254740992` and `1.50` into `1.5`, so
 * numbers are kept as their exact source text. Strings stay as their UTF-8 bytes (unescaped
 * strings are sliced from the body without decoding). Booleans become "true"/"false". Anything
 * else (null, objects, deeper nesting) is refused with a 400.
 */
export type ParsedValue = Buffer | string | ParsedValue[];

const isWs = (c: number | undefined): boolean =>
  c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
/** Bytes that can appear in a JSON number: digits, sign, point, exponent. */
const isNumberByte = (c: number | undefined): boolean =>
  c !== undefined &&
  ((c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || (c | 0x20) === 0x65);

const STRING = 0;
const ARRAY = 1;
const NUMBER = 2;
const TRUE = 3;
const FALSE = 4;
type Token = typeof STRING | typeof ARRAY | typeof NUMBER | typeof TRUE | typeof FALSE;

/** A string without escapes, all ASCII / with other bytes; a string with escapes. */
const ASCII = 0;
const BYTES = 1;
const ESCAPED = 2;
type StringKind = typeof ASCII | typeof BYTES | typeof ESCAPED;

const isHex = (c: number | undefined): boolean =>
  c !== undefined && ((c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66));

/** Whether `buf[at]` (just after a backslash) starts an escape JSON allows. */
function isEscape(buf: Buffer, at: number): boolean {
  const c = buf[at];
  if (c === 0x75)
    return isHex(buf[at + 1]) && isHex(buf[at + 2]) && isHex(buf[at + 3]) && isHex(buf[at + 4]);
  // " \ / b f n r t
  return (
    c === 0x22 ||
    c === 0x5c ||
    c === 0x2f ||
    c === 0x62 ||
    c === 0x66 ||
    c === 0x6e ||
    c === 0x72 ||
    c === 0x74
  );
}

class Reader {
  pos = 0;
  /** `maxArgs`: a command array longer than this is refused as soon as its item past it is read. */
  constructor(
    readonly buf: Buffer,
    private readonly maxArgs = Infinity,
  ) {}

  skipWs(): void {
    while (isWs(this.buf[this.pos])) this.pos++;
  }

  fail(what: string): never {
    throw new AppError("bad_request", `ERR invalid JSON body: ${what} at byte ${this.pos}`);
  }

  value(depth: number): ParsedValue {
    const token = this.token(depth);
    if (token === STRING) return this.string();
    if (token === ARRAY) return this.array(depth + 1);
    if (token === NUMBER) return this.number();
    return token === TRUE ? "true" : "false";
  }

  /**
   * Walks one value as `value` would, with the same errors, without building it (nothing it reads
   * outlives the call): -1 for a string, number or boolean, else the array's length.
   */
  skip(depth: number): number {
    const token = this.token(depth);
    if (token === STRING) this.stringEnd();
    else if (token === NUMBER) this.number();
    else if (token === ARRAY) return this.skipArray(depth + 1);
    return -1;
  }

  /** What the next value is; refuses null, objects and arrays nested deeper than arguments. */
  token(depth: number): Token {
    this.skipWs();
    const c = this.buf[this.pos];
    if (c === 0x22) return STRING;
    if (c === 0x5b) {
      if (depth >= 2) this.fail("nested arrays are not command arguments");
      return ARRAY;
    }
    if (c === 0x74 && this.literal("true")) return TRUE;
    if (c === 0x66 && this.literal("false")) return FALSE;
    if (c === 0x6e && this.literal("null")) this.fail("null is not a command argument");
    if (c === 0x7b) this.fail("objects are not command arguments");
    return NUMBER;
  }

  literal(word: string): boolean {
    if (this.buf.toString("latin1", this.pos, this.pos + word.length) !== word) return false;
    this.pos += word.length;
    return true;
  }

  array(depth: number): ParsedValue[] {
    const items: ParsedValue[] = [];
    this.items(() => {
      if (items.length === this.maxArgs) throw tooManyArgs(this.maxArgs);
      items.push(this.value(depth));
    });
    return items;
  }

  skipArray(depth: number): number {
    let length = 0;
    this.items(() => {
      if (length === this.maxArgs) throw tooManyArgs(this.maxArgs);
      this.skip(depth);
      length++;
    });
    return length;
  }

  /** `[item, …]` from its `[`: calls `item` at the start of each item. */
  items(item: () => void): void {
    this.pos++; // [
    this.skipWs();
    if (this.buf[this.pos] === 0x5d) {
      this.pos++;
      return;
    }
    for (;;) {
      item();
      if (this.endOfItem()) return;
    }
  }

  /** After an item: true past a closing `]`, false past a `,`; anything else is refused. */
  endOfItem(): boolean {
    this.skipWs();
    const c = this.buf[this.pos++];
    if (c === 0x5d) return true;
    if (c !== 0x2c) {
      this.pos--;
      this.fail("expected , or ]");
    }
    return false;
  }

  /**
   * A string's bytes: as a JS string when it is ASCII or had escapes (encoded to UTF-8 later,
   * which gives the same bytes, and is cheaper than a Buffer view per argument), else as a slice
   * of the body, so invalid UTF-8 reaches Redis unchanged.
   */
  string(): Buffer | string {
    const start = this.pos + 1;
    const kind = this.stringEnd();
    const end = this.pos - 1;
    if (kind === ASCII) return this.buf.toString("latin1", start, end);
    if (kind === BYTES) return this.buf.subarray(start, end);
    return JSON.parse(this.buf.toString("utf8", start - 1, end + 1)) as string;
  }

  /**
   * Reads a string from its opening quote to past its closing one, checking it as JSON.parse
   * would (no control characters, only JSON's escapes), and says how to build it.
   */
  stringEnd(): StringKind {
    const start = ++this.pos;
    let kind: StringKind = ASCII;
    let badEscape = false;
    for (;;) {
      const c = this.buf[this.pos];
      if (c === undefined) this.fail("unterminated string");
      if (c === 0x22) break;
      if (c < 0x20) this.fail("control character in string");
      if (c >= 0x80 && kind === ASCII) kind = BYTES;
      if (c === 0x5c) {
        kind = ESCAPED;
        if (!isEscape(this.buf, this.pos + 1)) badEscape = true;
        this.pos++;
      }
      this.pos++;
    }
    this.pos++;
    if (badEscape) {
      this.pos = start;
      this.fail("invalid escape in string");
    }
    return kind;
  }

  number(): string {
    let end = this.pos;
    while (end - this.pos < 400 && isNumberByte(this.buf[end])) end++;
    const match = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(
      this.buf.toString("latin1", this.pos, end),
    );
    if (!match || match[0].length === 0) this.fail("unexpected token");
    this.pos += match[0].length;
    return match[0];
  }
}

/** Longest stretch of reading before other requests get a turn (see `eachTop`). */
const SLICE_MS = 5;
/** Bodies up to this size are read in one go, without watching the clock. */
const SMALL_BODY = 64 * 1024;

const NOT_A_COMMAND = "ERR invalid JSON body: expected an array of command arrays";
const EMPTY_COMMAND = "ERR empty command in the list";

/**
 * Walks the top-level array, calling `item` at the start of each item (which reads it, building
 * it or not). A large body yields to the event loop every SLICE_MS, so a 10 MB body of a million
 * tiny commands never holds up other requests; with `maxItems`, an array longer than that is
 * refused as soon as the item past it is read.
 */
async function eachTop(
  reader: Reader,
  maxItems: number,
  item: () => void,
  tooMany: (max: number) => AppError = tooManyCommands,
): Promise<void> {
  reader.skipWs();
  if (reader.buf[reader.pos] !== 0x5b) reader.fail("expected a JSON array");
  reader.pos++;
  reader.skipWs();
  if (reader.buf[reader.pos] === 0x5d) reader.pos++;
  else {
    const sliced = reader.buf.length > SMALL_BODY;
    let until = performance.now() + SLICE_MS;
    // The clock is read every 256 items, or sooner after 64 KiB of them (long commands).
    let checkedAt = reader.pos;
    for (let count = 1; ; count++) {
      item();
      if (count > maxItems) throw tooMany(maxItems);
      if (reader.endOfItem()) break;
      if (!sliced || ((count & 255) !== 0 && reader.pos - checkedAt < SMALL_BODY)) continue;
      checkedAt = reader.pos;
      if (performance.now() > until) {
        await new Promise((resolve) => setImmediate(resolve));
        until = performance.now() + SLICE_MS;
      }
    }
  }
  reader.skipWs();
  if (reader.pos !== reader.buf.length) reader.fail("unexpected data after the array");
}

function tooManyCommands(max: number): AppError {
  return new AppError(
    "request_too_large",
    `ERR max commands per request exceeded: at most ${max} in one pipeline or transaction`,
  );
}

/**
 * A command's arguments are read, checked and encoded for Redis in one go: 2.6 million of them
 * (10 MB) held the event loop for 80-130 ms alone, 250-570 ms inside a pipeline.
 */
function tooManyArgs(max: number): AppError {
  return new AppError(
    "request_too_large",
    `ERR max arguments per command exceeded: at most ${max} in one command (STASHD_KV_MAX_COMMAND_ARGS)`,
  );
}

/** The top-level array's items; `maxArgs` bounds the arrays inside them (commands' arguments). */
async function parseTop(
  body: Buffer,
  maxItems = Infinity,
  maxArgs = Infinity,
  tooMany = tooManyCommands,
): Promise<ParsedValue[]> {
  const reader = new Reader(body, maxArgs);
  const items: ParsedValue[] = [];
  await eachTop(reader, maxItems, () => items.push(reader.value(1)), tooMany);
  return items;
}

/**
 * The usual body, read by `JSON.parse`: all ASCII and no numbers, so every argument is a string
 * or a boolean and JSON.parse builds exactly what `Reader` would (an ASCII string, without escapes
 * or with them, is the same JS string either way). `JSON.parse` is native and makes no object per
 * string; on a pipeline of 100 GETs it takes a fifth of Reader's time (benchmarks-log.md, 2026-11-26
 * night). Anything else — a number (whose lexeme JSON.parse would lose), other bytes (kept raw by
 * Reader), invalid JSON, null, objects, a wrong shape — gives undefined, and the caller reads the
 * body with Reader, which gives the answer and errors it always gave.
 */
function parsePlain(body: Buffer): unknown[] | undefined {
  if (body.length > SMALL_BODY || !isAscii(body)) return undefined;
  const text = body.toString("latin1");
  const scanned = scanStringArrays(body, text);
  if (scanned !== undefined) return scanned.length > 0 ? scanned : undefined;
  let top: unknown;
  try {
    top = JSON.parse(text);
  } catch {
    return undefined;
  }
  return Array.isArray(top) && top.length > 0 ? top : undefined;
}

/**
 * What `JSON.parse(text)` gives when `body` (ASCII, `text` its latin1 string) is an array of
 * strings, or of arrays of strings, and no string has an escape; else undefined (the caller then
 * asks JSON.parse). The strings are slices of `text`: equal to JSON.parse's, as an unescaped
 * ASCII string's value is its text.
 *
 * Why: that is nearly every command body (`["GET","k"]`, a pipeline of such), and this reads a
 * pipeline of 100 GETs in about half of JSON.parse's time (benchmarks-log.md, "KV pipeline,
 * 2026-11-27"). It looks at the Buffer's bytes: a loop over `charCodeAt` of the text measured no
 * faster than JSON.parse.
 */
function scanStringArrays(body: Buffer, text: string): (string | string[])[] | undefined {
  const top: (string | string[])[] = [];
  let at = skipSpace(body, 0);
  if (body[at] !== 0x5b) return undefined; // [
  at = skipSpace(body, at + 1);
  if (body[at] === 0x5d) return skipSpace(body, at + 1) === body.length ? top : undefined;
  for (;;) {
    const c = body[at];
    if (c === 0x22) {
      const end = stringEnd(body, at + 1);
      if (end < 0) return undefined;
      top.push(text.slice(at + 1, end));
      at = end + 1;
    } else if (c === 0x5b) {
      const inner: string[] = [];
      at = scanStrings(body, text, at + 1, inner);
      if (at < 0) return undefined;
      top.push(inner);
    } else return undefined;
    at = skipSpace(body, at);
    const next = body[at];
    if (next === 0x5d) break;
    if (next !== 0x2c) return undefined;
    at = skipSpace(body, at + 1);
  }
  return skipSpace(body, at + 1) === body.length ? top : undefined;
}

/**
 * The strings of an array, from after its `[`, into `out`; returns the position after its `]`,
 * or -1 for anything but unescaped strings.
 */
function scanStrings(body: Buffer, text: string, at: number, out: string[]): number {
  at = skipSpace(body, at);
  if (body[at] === 0x5d) return at + 1;
  for (;;) {
    if (body[at] !== 0x22) return -1;
    const end = stringEnd(body, at + 1);
    if (end < 0) return -1;
    out.push(text.slice(at + 1, end));
    at = skipSpace(body, end + 1);
    const next = body[at];
    if (next === 0x5d) return at + 1;
    if (next !== 0x2c) return -1;
    at = skipSpace(body, at + 1);
  }
}

/**
 * Where the string whose first byte is at `at` ends (its closing `"`); -1 if it has an escape or
 * a control character, or does not end.
 */
export function stringEnd(body: Buffer, at: number): number {
  for (; at < body.length; at++) {
    const c = body[at] as number;
    if (c === 0x22) return at;
    if (c < 0x20 || c === 0x5c) return -1;
  }
  return -1;
}

/** Past JSON's whitespace (space, LF, CR, tab) from `at`. */
export function skipSpace(body: Buffer, at: number): number {
  while (at < body.length && isWs(body[at])) at++;
  return at;
}

/**
 * Whether `items` (from parsePlain) are all strings or booleans; booleans are replaced by
 * "true" / "false" in place, as Reader reads them.
 */
function plainArguments(items: unknown[]): items is string[] {
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (typeof item === "string") continue;
    if (typeof item !== "boolean") return false;
    items[i] = item ? "true" : "false";
  }
  return true;
}

/** parsePlain's commands: each a non-empty array of plain arguments, at most `maxCommands`. */
function plainCommands(body: Buffer, maxCommands: number, maxArgs: number): string[][] | undefined {
  const top = parsePlain(body);
  if (top === undefined || top.length > maxCommands) return undefined;
  for (const item of top) {
    if (!Array.isArray(item) || item.length === 0 || item.length > maxArgs) return undefined;
    if (!plainArguments(item)) return undefined;
  }
  return top as string[][];
}

/** `["CMD", arg, …]` → argv when parsePlain can read it (see there), else undefined. */
export function parsePlainCommand(body: Buffer): string[] | undefined {
  const plain = parsePlain(body);
  return plain !== undefined && plainArguments(plain) ? plain : undefined;
}

/** `["CMD", arg, …]` → argv, of at most `maxArgs` arguments (STASHD_KV_MAX_COMMAND_ARGS). */
export async function parseCommand(body: Buffer, maxArgs = Infinity): Promise<(Buffer | string)[]> {
  const plain = parsePlainCommand(body);
  if (plain !== undefined && plain.length <= maxArgs) return plain;
  const top = await parseTop(body, maxArgs, Infinity, tooManyArgs);
  if (top.length === 0) throw new AppError("bad_request", "ERR empty command");
  return top.map((v) => {
    if (Array.isArray(v)) {
      throw new AppError(
        "bad_request",
        "ERR invalid JSON body: arguments must be strings, numbers or booleans",
      );
    }
    return v;
  });
}

/**
 * The commands of a `/pipeline` or `/multi-exec` body, handed out a slice at a time by `take`.
 * A large body is read twice: first only checked (every error the full read would give, nothing
 * kept), then each slice is built when it is taken. A huge pipeline's commands thus never all
 * exist at once: few objects stay alive, so garbage-collection pauses stay short.
 */
export class CommandList {
  private taken = 0;
  private readonly start: number;

  constructor(
    readonly length: number,
    private readonly source: Reader | (Buffer | string)[][],
    /** Bytes of the body the commands are read from. */
    readonly bytes: number,
  ) {
    this.start = Array.isArray(source) ? 0 : source.pos;
  }

  /** Hands the commands out again from the first (a transaction reads them twice). */
  restart(): void {
    this.taken = 0;
    if (!Array.isArray(this.source)) this.source.pos = this.start;
  }

  /**
   * CommandSource.take: the next `n` commands, fewer at the end or, read from a large body, once
   * they hold `maxArgs` arguments (an already parsed body of at most 64 KiB is sliced by count).
   */
  take(n: number, maxArgs = Infinity): (Buffer | string)[][] {
    const count = Math.min(n, this.length - this.taken);
    const from = this.taken;
    if (Array.isArray(this.source)) {
      this.taken += count;
      return this.source.slice(from, from + count);
    }
    const commands: (Buffer | string)[][] = [];
    let args = 0;
    while (commands.length < count && (commands.length === 0 || args < maxArgs)) {
      const command = this.source.value(1) as (Buffer | string)[];
      this.source.endOfItem();
      commands.push(command);
      args += command.length;
    }
    this.taken += commands.length;
    return commands;
  }

  /** The commands not taken yet. */
  rest(): (Buffer | string)[][] {
    return this.take(this.length - this.taken);
  }
}

/**
 * `[["CMD", arg, …], …]` → its commands; an empty list is refused, and so is one of more than
 * `maxCommands` (STASHD_KV_MAX_COMMANDS_PER_REQUEST). Every error comes before anything is taken.
 */
export async function readCommandList(
  body: Buffer,
  maxCommands = Infinity,
  maxArgs = Infinity,
): Promise<CommandList> {
  const plain = plainCommands(body, maxCommands, maxArgs);
  if (plain !== undefined) return new CommandList(plain.length, plain, body.length);
  if (body.length <= SMALL_BODY) {
    const top = await parseTop(body, maxCommands, maxArgs);
    refuseBadList(top.length, firstShapeError(top));
    return new CommandList(top.length, top as (Buffer | string)[][], body.length);
  }
  const reader = new Reader(body, maxArgs);
  let length = 0;
  let firstError: string | undefined;
  await eachTop(reader, maxCommands, () => {
    const items = reader.skip(1);
    if (firstError === undefined && items <= 0)
      firstError = items < 0 ? NOT_A_COMMAND : EMPTY_COMMAND;
    length++;
  });
  refuseBadList(length, firstError);
  const source = new Reader(body, maxArgs);
  source.skipWs();
  source.pos++; // [
  return new CommandList(length, source, body.length);
}

/** The parse of `readCommandList` in one go: its commands, all built. */
export async function parseCommandList(
  body: Buffer,
  maxCommands = Infinity,
): Promise<(Buffer | string)[][]> {
  return (await readCommandList(body, maxCommands)).rest();
}

function firstShapeError(top: ParsedValue[]): string | undefined {
  for (const item of top) {
    if (!Array.isArray(item)) return NOT_A_COMMAND;
    if (item.length === 0) return EMPTY_COMMAND;
  }
  return undefined;
}

/** An empty list, or the first item that is not a non-empty array, refuses the whole list. */
function refuseBadList(length: number, firstError: string | undefined): void {
  if (length === 0)
    throw new AppError("bad_request", "ERR empty pipeline: send at least one command");
  if (firstError !== undefined) throw new AppError("bad_request", firstError);
}
