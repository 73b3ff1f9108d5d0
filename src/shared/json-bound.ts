import { AppError } from "./errors.js";

/**
 * JSON request bodies parsed whole (`JSON.parse`, native: it cannot be split into slices) cost
 * time by their number of values, not their bytes: 10 MB of `[{},{},…]` (3.5 million objects)
 * took about a second of JSON.parse on a 2-core VM, a second in which the process served nothing
 * else, where 10 MB of one string took 15 ms. So a body's values are counted before it is
 * parsed, by one pass over its bytes (about 1 ns a byte), and a body with more is refused.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;

/**
 * At least the number of values in `body` minus one, counting at most up to `max + 1`: the
 * commas, colons and opening brackets outside strings (each value but the first follows one of
 * them). For a body that is not JSON the count is meaningless but still bounded by its length.
 */
export function countJsonSeparators(body: Uint8Array, max: number): number {
  let count = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i] as number;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === COMMA || c === COLON || c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++count > max) return count;
    }
  }
  return count;
}

/** A 400 `<what> has more than N JSON values (<setting>)` for a body past `maxValues`. */
export function checkJsonValues(
  body: Uint8Array,
  maxValues: number,
  what: string,
  setting: string,
): void {
  if (countJsonSeparators(body, maxValues) > maxValues) {
    throw new AppError(
      "bad_request",
      `${what} has more than ${maxValues} JSON values (${setting})`,
    );
  }
}

/**
 * `JSON.parse` of a UTF-8 body with at most about `maxValues` values (400 `{"error"}` past it,
 * before any parsing; `setting` names the limit in the message), or a 400 when it is not JSON.
 */
export function parseBoundedJson(body: Buffer, maxValues: number, setting: string): unknown {
  checkJsonValues(body, maxValues, "request body", setting);
  try {
    return JSON.parse(body.toString("utf8")) as unknown;
  } catch {
    throw new AppError("bad_request", "request body is not valid JSON");
  }
}
