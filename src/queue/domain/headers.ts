import type { Headers } from "./message.js";

/**
 * Most header names whose canonical form is kept (cleared when full: a bound, not an LRU), and
 * the longest name kept: the cache holds at most 1024 x 64 bytes of names, whatever clients send.
 */
const CANONICAL_KEPT = 1024;
const CANONICAL_LONGEST = 64;
const canonicalNames = new Map<string, string>();

/**
 * Go's canonical header casing (`bypass-tunnel-reminder` -> `Bypass-Tunnel-Reminder`). Every
 * delivery's response headers and every forwarded publish header pass here, mostly the same few
 * names: each name's casing is worked out once (a lower-case, a split and a join cost about
 * 0.3 µs a name) and then looked up.
 */
export function canonicalHeader(name: string): string {
  let canonical = canonicalNames.get(name);
  if (canonical === undefined) {
    canonical = name
      .toLowerCase()
      .split("-")
      .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
      .join("-");
    if (name.length > CANONICAL_LONGEST) return canonical;
    if (canonicalNames.size >= CANONICAL_KEPT) canonicalNames.clear();
    canonicalNames.set(name, canonical);
  }
  return canonical;
}

/**
 * The key of header `name` in a Headers object (canonicalHeader), or undefined for `__proto__`,
 * which on a plain object names its prototype, not a field: such a header is dropped, as
 * node:http's `req.headers` drops it (an `Upstash-Forward-__proto__` publish header was a 500 on
 * every route that forwards headers, and a destination's `__proto__` response header replaced
 * the prototype of the headers kept in its log).
 */
export function headerKey(name: string): string | undefined {
  const key = canonicalHeader(name);
  return key === "__proto__" ? undefined : key;
}

/** Adds `value` to header `name` of `target` (a `__proto__` header is dropped: headerKey). */
export function addHeader(target: Headers, name: string, value: string): void {
  const key = headerKey(name);
  if (key !== undefined) (target[key] ??= []).push(value);
}

/**
 * Headers that define the delivery's connection or framing rather than its content: the HTTP
 * client sets them itself (Host from the URL, Content-Length from the body). A message's own
 * headers (`Upstash-Forward-*`, callback and URL-group headers) never set them, as QStash's Go
 * client ignores them: a forwarded `Host` would reach another virtual host than the checked
 * URL names, a `Content-Length` or `Transfer-Encoding` would desynchronise the request.
 */
const CONNECTION_HEADERS = new Set([
  "host",
  "connection",
  "content-length",
  "transfer-encoding",
  "keep-alive",
  "upgrade",
  "te",
  "trailer",
  "expect",
]);

/** Whether a message may not set header `name` on its delivery (see CONNECTION_HEADERS). */
export function isConnectionHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return CONNECTION_HEADERS.has(lower) || lower.startsWith("proxy-");
}
