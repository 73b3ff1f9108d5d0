import type { Arg } from "../../shared/redis/resp.js";

/**
 * The command-in-the-path form: `/set/foo/bar?EX=100`.
 *
 * Decisions (the real service documents none of this; see docs/compatibility.md):
 * - the raw, still-escaped path is split on `/` first, then each segment is percent-decoded to
 *   bytes on its own, so `%2F` is a literal slash inside an argument and `+` stays `+`;
 * - leading slashes collapse (`//pipeline` from a base URL with a trailing slash works) and one
 *   trailing slash is ignored; empty segments in between are empty-string arguments;
 * - query fields are form-decoded (`+` is a space) and append `name`, then `value` if it has one;
 *   `_token` is authentication and never an argument.
 *
 * Arguments that needed no decoding stay strings (encoded to the same UTF-8 bytes later).
 */
export interface UrlParts {
  segments: Arg[];
  query: Arg[];
  token: string | undefined;
}

export function parseUrl(rawUrl: string): UrlParts {
  if (rawUrl === "/") return { segments: [], query: [], token: undefined };
  const q = rawUrl.indexOf("?");
  const rawPath = q < 0 ? rawUrl : rawUrl.slice(0, q);
  let from = 0;
  while (rawPath.charCodeAt(from) === 0x2f) from++;
  const pieces = rawPath.slice(from).split("/");
  if (pieces.length > 0 && pieces[pieces.length - 1] === "") pieces.pop();
  const parts: UrlParts = {
    segments: pieces.map((p) => decodeArg(p, false)),
    query: [],
    token: undefined,
  };
  if (q >= 0) readQuery(rawUrl.slice(q + 1), parts);
  return parts;
}

function readQuery(query: string, parts: UrlParts): void {
  for (const field of query.split("&")) {
    if (field === "") continue;
    const eq = field.indexOf("=");
    const name = decodeArg(eq < 0 ? field : field.slice(0, eq), true);
    if (name.toString() === "_token") {
      parts.token = percentDecode(field.slice(eq + 1), true).toString();
      continue;
    }
    parts.query.push(name);
    if (eq >= 0) parts.query.push(decodeArg(field.slice(eq + 1), true));
  }
}

/** `percentDecode`, or the text itself when it holds nothing to decode. */
function decodeArg(text: string, form: boolean): Arg {
  return needsDecoding(text, form) ? percentDecode(text, form) : text;
}

function needsDecoding(text: string, form: boolean): boolean {
  return text.includes("%") || (form && text.includes("+"));
}

/** Percent-decodes to raw bytes (invalid escapes stay literal); `form` also maps `+` to space. */
export function percentDecode(text: string, form: boolean): Buffer {
  if (!needsDecoding(text, form)) return Buffer.from(text);
  const src = Buffer.from(text);
  const out = Buffer.alloc(src.length);
  let n = 0;
  for (let i = 0; i < src.length; i++) {
    const c = src[i] as number;
    if (c === 0x25 && i + 2 < src.length && isHex(src[i + 1]) && isHex(src[i + 2])) {
      out[n++] = parseInt(src.toString("latin1", i + 1, i + 3), 16);
      i += 2;
    } else {
      out[n++] = form && c === 0x2b ? 0x20 : c;
    }
  }
  return out.subarray(0, n);
}

function isHex(c: number | undefined): boolean {
  return (
    c !== undefined &&
    ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66))
  );
}
