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
 */
export interface UrlParts {
  segments: Buffer[];
  query: Buffer[];
  token: string | undefined;
}

export function parseUrl(rawUrl: string): UrlParts {
  const q = rawUrl.indexOf("?");
  const rawPath = q < 0 ? rawUrl : rawUrl.slice(0, q);
  const pieces = rawPath.replace(/^\/+/, "").split("/");
  if (pieces.length > 0 && pieces[pieces.length - 1] === "") pieces.pop();
  const parts: UrlParts = {
    segments: pieces.map((p) => percentDecode(p, false)),
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
    const name = percentDecode(eq < 0 ? field : field.slice(0, eq), true);
    if (name.toString() === "_token") {
      parts.token = percentDecode(field.slice(eq + 1), true).toString();
      continue;
    }
    parts.query.push(name);
    if (eq >= 0) parts.query.push(percentDecode(field.slice(eq + 1), true));
  }
}

/** Percent-decodes to raw bytes (invalid escapes stay literal); `form` also maps `+` to space. */
export function percentDecode(text: string, form: boolean): Buffer {
  if (!text.includes("%") && !(form && text.includes("+"))) return Buffer.from(text);
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
