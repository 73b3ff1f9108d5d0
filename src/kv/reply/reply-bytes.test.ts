import { describe, expect, it } from "vitest";
import type { Reply } from "../../shared/redis/resp.js";
import { renderItem } from "./reply.js";
import { renderList } from "./reply-bytes.js";

const bulk = (value: string | Buffer): Reply => ({ kind: "bulk", value: Buffer.from(value) });
const asStrings = (replies: Reply[], base64: boolean): string =>
  `[${replies.map((r) => renderItem(r, base64)).join(",")}]`;

/** A deterministic pseudo-random byte source (xorshift), so a failure can be replayed. */
function bytes(seed: number): (n: number) => Buffer {
  let x = seed;
  return (n) => {
    const out = Buffer.alloc(n);
    for (let i = 0; i < n; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      out[i] = x & 0xff;
    }
    return out;
  };
}

describe("renderList", () => {
  const fixed: Reply[] = [
    bulk(""),
    bulk("v"),
    bulk("OK"),
    { kind: "simple", value: Buffer.from("OK") },
    { kind: "simple", value: Buffer.from("QUEUED") },
    bulk("x".repeat(64)),
    bulk("x".repeat(65)),
    bulk('a"b\\c'),
    bulk("tab\there\x7f"),
    bulk("ü€😀"),
    bulk(Buffer.from([0xff, 0xfe, 0x80])),
    { kind: "int", value: "-9223372036854775808" },
    { kind: "nil", array: false },
    { kind: "nil", array: true },
    { kind: "error", value: "ERR wrong number of arguments" },
    {
      kind: "error",
      value: "NOPERM User default_ro has no permissions to run the 'set' command",
    },
    {
      kind: "array",
      value: [bulk("a"), { kind: "int", value: "1" }, { kind: "array", value: [] }],
    },
  ];

  it.each([false, true])("writes what the string rendering writes (base64 %s)", (base64) => {
    expect(renderList(fixed, base64).toString()).toBe(asStrings(fixed, base64));
    for (const one of fixed)
      expect(renderList([one], base64).toString()).toBe(asStrings([one], base64));
    expect(renderList([], base64).toString()).toBe("[]");
  });

  it.each([false, true])("matches it on random values of every length (base64 %s)", (base64) => {
    const random = bytes(12345);
    const printable = (n: number): Buffer => Buffer.from(random(n).map((b) => 0x20 + (b % 0x60)));
    const replies: Reply[] = [];
    for (let n = 0; n <= 70; n++) replies.push(bulk(random(n)), bulk(printable(n)));
    expect(renderList(replies, base64).toString()).toBe(asStrings(replies, base64));
  });
});
