import type { Reply } from "../shared/redis/resp.js";

/**
 * RESP2 reply → the JSON the SDKs expect: integers as numbers (exact digits, never through a JS
 * number), strings as strings (invalid UTF-8 → U+FFFD), nil as null, arrays as arrays.
 *
 * With `Upstash-Encoding: base64`, every string at every depth is base64 except a top-level
 * result that is exactly `OK` (docs/redis-rest-protocol.md §2.2: both SDKs decode it correctly; a raw "OK" inside
 * an array would turn into garbage in @upstash/redis). Errors are never encoded.
 */
export function renderValue(reply: Reply, base64: boolean, top: boolean): string {
  switch (reply.kind) {
    case "simple":
    case "bulk":
      if (base64 && !(top && isOk(reply.value))) return `"${reply.value.toString("base64")}"`;
      return JSON.stringify(reply.value.toString("utf8"));
    case "int":
      return reply.value;
    case "nil":
      return "null";
    case "error":
      return renderValue(
        { kind: "bulk", value: Buffer.from(upstashError(reply.value)) },
        base64,
        false,
      );
    case "array": {
      let out = "[";
      for (let i = 0; i < reply.value.length; i++) {
        if (i > 0) out += ",";
        out += renderValue(reply.value[i] as Reply, base64, false);
      }
      return `${out}]`;
    }
  }
}

function isOk(value: Buffer): boolean {
  return value.length === 2 && value[0] === 0x4f && value[1] === 0x4b;
}

/** `{"result":…}` or `{"error":…}` for one reply. */
export function renderItem(reply: Reply, base64: boolean): string {
  if (reply.kind === "error") return `{"error":${JSON.stringify(upstashError(reply.value))}}`;
  return `{"result":${renderValue(reply, base64, true)}}`;
}

/**
 * Redis words ACL refusals differently by version (`NOPERM this user has no permissions to run
 * the 'set' command` in 7.0, `NOPERM User <u> has no permissions …` in 7.2+); the Upstash service
 * (and code matching on it) says `… command or its subcommand`. One wording whatever the backend.
 */
export function upstashError(text: string): string {
  const m = /^NOPERM (?:this user|User \S+) has no permissions to run the '([^']+)' command/.exec(
    text,
  );
  return m
    ? `NOPERM this user has no permissions to run the '${m[1] ?? ""}' command or its subcommand`
    : text;
}
