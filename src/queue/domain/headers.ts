import type { Headers } from "./message.js";

/** Go's canonical header casing (`bypass-tunnel-reminder` -> `Bypass-Tunnel-Reminder`). */
export function canonicalHeader(name: string): string {
  return name
    .toLowerCase()
    .split("-")
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("-");
}

export function addHeader(target: Headers, name: string, value: string): void {
  const key = canonicalHeader(name);
  (target[key] ??= []).push(value);
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
