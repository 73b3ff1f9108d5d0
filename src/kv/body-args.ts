import { AppError } from "../shared/errors.js";

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

class Reader {
  pos = 0;
  constructor(readonly buf: Buffer) {}

  skipWs(): void {
    while (isWs(this.buf[this.pos])) this.pos++;
  }

  fail(what: string): never {
    throw new AppError("bad_request", `ERR invalid JSON body: ${what} at byte ${this.pos}`);
  }

  value(depth: number): ParsedValue {
    this.skipWs();
    const c = this.buf[this.pos];
    if (c === 0x22) return this.string();
    if (c === 0x5b) {
      if (depth >= 2) this.fail("nested arrays are not command arguments");
      return this.array(depth + 1);
    }
    if (c === 0x74 && this.literal("true")) return "true";
    if (c === 0x66 && this.literal("false")) return "false";
    if (c === 0x6e && this.literal("null")) this.fail("null is not a command argument");
    if (c === 0x7b) this.fail("objects are not command arguments");
    return this.number();
  }

  literal(word: string): boolean {
    if (this.buf.toString("latin1", this.pos, this.pos + word.length) !== word) return false;
    this.pos += word.length;
    return true;
  }

  array(depth: number): ParsedValue[] {
    this.pos++; // [
    const items: ParsedValue[] = [];
    this.skipWs();
    if (this.buf[this.pos] === 0x5d) {
      this.pos++;
      return items;
    }
    for (;;) {
      items.push(this.value(depth));
      this.skipWs();
      const c = this.buf[this.pos++];
      if (c === 0x5d) return items;
      if (c !== 0x2c) {
        this.pos--;
        this.fail("expected , or ]");
      }
    }
  }

  /**
   * A string's bytes: as a JS string when it is ASCII or had escapes (encoded to UTF-8 later,
   * which gives the same bytes, and is cheaper than a Buffer view per argument), else as a slice
   * of the body, so invalid UTF-8 reaches Redis unchanged.
   */
  string(): Buffer | string {
    const start = ++this.pos;
    let escaped = false;
    let ascii = true;
    for (;;) {
      const c = this.buf[this.pos];
      if (c === undefined) this.fail("unterminated string");
      if (c === 0x22) break;
      if (c < 0x20) this.fail("control character in string");
      if (c >= 0x80) ascii = false;
      if (c === 0x5c) {
        escaped = true;
        this.pos++;
      }
      this.pos++;
    }
    const end = this.pos++;
    if (!escaped)
      return ascii ? this.buf.toString("latin1", start, end) : this.buf.subarray(start, end);
    try {
      return JSON.parse(this.buf.toString("utf8", start - 1, end + 1)) as string;
    } catch {
      this.pos = start;
      return this.fail("invalid escape in string");
    }
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

/** Longest stretch of parsing before other requests get a turn (see `parseTop`). */
const SLICE_MS = 5;
/** Bodies up to this size are parsed in one go, without watching the clock. */
const SMALL_BODY = 64 * 1024;

/**
 * The items of the top-level array. Parsing a large body yields to the event loop every SLICE_MS,
 * so a 10 MB body of a million tiny commands never holds up other requests; with `maxItems`, an
 * array longer than that is refused as soon as the item past it is read.
 */
async function parseTop(body: Buffer, maxItems = Infinity): Promise<ParsedValue[]> {
  const reader = new Reader(body);
  reader.skipWs();
  if (reader.buf[reader.pos] !== 0x5b) reader.fail("expected a JSON array");
  reader.pos++;
  const items: ParsedValue[] = [];
  reader.skipWs();
  if (reader.buf[reader.pos] === 0x5d) reader.pos++;
  else if (body.length <= SMALL_BODY) readItems(reader, items, maxItems, Infinity);
  else {
    while (!readItems(reader, items, maxItems, performance.now() + SLICE_MS)) {
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  reader.skipWs();
  if (reader.pos !== body.length) reader.fail("unexpected data after the array");
  return items;
}

/**
 * Reads top-level items up to the closing `]` (then true), or until the clock passes `until`,
 * looked at every 256 items (then false: call again to go on).
 */
function readItems(reader: Reader, items: ParsedValue[], maxItems: number, until: number): boolean {
  for (;;) {
    items.push(reader.value(1));
    if (items.length > maxItems) {
      throw new AppError(
        "request_too_large",
        `ERR max commands per request exceeded: at most ${maxItems} in one pipeline or transaction`,
      );
    }
    reader.skipWs();
    const c = reader.buf[reader.pos++];
    if (c === 0x5d) return true;
    if (c !== 0x2c) {
      reader.pos--;
      reader.fail("expected , or ]");
    }
    if ((items.length & 255) === 0 && performance.now() > until) return false;
  }
}

/** `["CMD", arg, …]` → argv. */
export async function parseCommand(body: Buffer): Promise<(Buffer | string)[]> {
  const top = await parseTop(body);
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
 * `[["CMD", arg, …], …]` → list of argv; an empty list is refused, and so is one of more than
 * `maxCommands` (STASHD_KV_MAX_COMMANDS_PER_REQUEST).
 */
export async function parseCommandList(
  body: Buffer,
  maxCommands = Infinity,
): Promise<(Buffer | string)[][]> {
  const top = await parseTop(body, maxCommands);
  if (top.length === 0)
    throw new AppError("bad_request", "ERR empty pipeline: send at least one command");
  return top.map((item) => {
    if (!Array.isArray(item)) {
      throw new AppError(
        "bad_request",
        "ERR invalid JSON body: expected an array of command arrays",
      );
    }
    if (item.length === 0) throw new AppError("bad_request", "ERR empty command in the list");
    return item as (Buffer | string)[];
  });
}
