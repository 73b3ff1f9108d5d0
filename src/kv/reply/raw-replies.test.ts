import { describe, expect, it } from "vitest";
import { renderList, renderRaw } from "./reply-bytes.js";
import { rawRenderableAtOnce, renderableAtOnce, renderItem } from "./reply.js";
import { RawReplies, rawResp2 } from "../../shared/redis/raw-replies.js";
import { RAW_NIL, RespParser, serializeReply, type Reply } from "../../shared/redis/resp.js";

/** A deterministic pseudo-random source (xorshift), so a failure can be replayed. */
function random(seed: number): (n: number) => number {
  let x = seed;
  return (n) => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
}

/** RESP of top-level replies of every kind the parser hands out raw, and some it does not. */
function replyStream(seed: number, count: number): Buffer {
  const next = random(seed);
  const lengths = [0, 1, 2, 3, 63, 64, 65, 200, 70_000];
  const parts: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const kind = next(9);
    if (kind <= 2) {
      const n = lengths[next(lengths.length)] as number;
      const value = Buffer.alloc(n);
      // Printable bytes, or any byte (invalid UTF-8, quotes, control characters).
      for (let j = 0; j < n; j++) value[j] = kind === 0 ? 0x20 + next(0x5f) : next(256);
      parts.push(Buffer.from(`$${n}\r\n`), value, Buffer.from("\r\n"));
    } else if (kind === 3) parts.push(Buffer.from(next(2) ? "+OK\r\n" : "+QUEUED\r\n"));
    else if (kind === 4) parts.push(Buffer.from(`:${next(2) ? "-" : ""}${next(1e9)}\r\n`));
    else if (kind === 5) parts.push(Buffer.from("$-1\r\n"));
    else if (kind === 6) parts.push(Buffer.from("-ERR wrong kind of value\r\n"));
    else if (kind === 7) parts.push(Buffer.from("*3\r\n$1\r\na\r\n:1\r\n$-1\r\n"));
    else parts.push(Buffer.from(next(2) ? "*-1\r\n" : "*0\r\n"));
  }
  return Buffer.concat(parts);
}

interface Parsed {
  replies: Reply[];
  costs: number[];
}

/** Feeds `stream` in chunks cut at random points, with a budget per top-level reply. */
function feed(stream: Buffer, parser: RespParser, seed: number): void {
  const next = random(seed);
  for (let at = 0; at < stream.length;) {
    const n = 1 + next(4000);
    parser.feed(stream.subarray(at, at + n));
    at += n;
  }
}

function parseObjects(stream: Buffer, limit: number, seed: number): Parsed {
  const out: Parsed = { replies: [], costs: [] };
  const parser = new RespParser(
    (reply, cost) => {
      out.replies.push(reply);
      out.costs.push(cost);
    },
    () => limit,
  );
  feed(stream, parser, seed);
  return out;
}

function parseRaw(
  stream: Buffer,
  limit: number,
  seed: number,
): { raw: RawReplies; costs: number[] } {
  const raw = new RawReplies();
  const costs: number[] = [];
  const parser = new RespParser(
    (reply, cost) => {
      raw.addObject(reply);
      costs.push(cost);
    },
    () => limit,
    (kind, buf, start, end, cost) => {
      if (kind === RAW_NIL) raw.addNil();
      else raw.addValue(kind, buf, start, end);
      costs.push(cost);
    },
  );
  feed(stream, parser, seed);
  return { raw, costs };
}

describe("RawReplies", () => {
  it.each([
    [1, Infinity],
    [2, Infinity],
    [3, 5000],
    [4, 300],
    [5, 0],
  ])(
    "hold what the parser's Reply objects hold, and cost the same (seed %i, budget %s)",
    (seed, limit) => {
      const stream = replyStream(seed, 300);
      const objects = parseObjects(stream, limit, seed);
      const { raw, costs } = parseRaw(stream, limit, seed);
      expect(raw.length).toBe(objects.replies.length);
      expect(raw.toReplies()).toEqual(objects.replies);
      expect(costs).toEqual(objects.costs);
      expect(raw.hasErrors).toBe(
        objects.replies.some(
          (r) =>
            r.kind === "error" || (r.kind === "array" && r.value.some((i) => i.kind === "error")),
        ),
      );
    },
  );

  it.each([false, true])(
    "render as the Reply objects render, as JSON (base64 %s) and RESP2",
    (base64) => {
      for (let seed = 10; seed < 40; seed++) {
        const stream = replyStream(seed, 1 + (seed % 7) * 20);
        const objects = parseObjects(stream, Infinity, seed).replies;
        const { raw } = parseRaw(stream, Infinity, seed);
        expect(renderRaw(raw, base64).toString("latin1")).toBe(
          renderList(objects, base64).toString("latin1"),
        );
        expect(rawResp2(raw).equals(Buffer.concat(objects.map(serializeReply)))).toBe(true);
        expect(rawRenderableAtOnce(raw)).toBe(renderableAtOnce({ kind: "array", value: objects }));
      }
    },
  );

  it.each([false, true])(
    "render as the string rendering does, growing and giving back the scratch (base64 %s)",
    (base64) => {
      const asStrings = (replies: Reply[]): string =>
        `[${replies.map((r) => renderItem(r, base64)).join(",")}]`;
      // Short lists, then lists past the 16 KiB scratch (many short values; long escaped ones
      // rendered by renderItem; over 256 KiB, after which the scratch is dropped), then short again.
      const streams = [
        replyStream(50, 10),
        Buffer.from("$64\r\n" + "x".repeat(64) + "\r\n")
          .toString("latin1")
          .repeat(2000),
        ("$40000\r\n" + '"\x01'.repeat(20_000) + "\r\n").repeat(3),
        replyStream(51, 10),
        replyStream(52, 400),
      ].map((s) => (typeof s === "string" ? Buffer.from(s, "latin1") : s));
      for (const [i, stream] of streams.entries()) {
        const objects = parseObjects(stream, Infinity, i).replies;
        const { raw } = parseRaw(stream, Infinity, i);
        expect(renderRaw(raw, base64).toString("latin1")).toBe(
          Buffer.from(asStrings(objects)).toString("latin1"),
        );
      }
    },
  );

  it.each([false, true])(
    "render behind a head given the body's length, the same body after it (base64 %s)",
    (base64) => {
      const head = (length: number): string =>
        `HTTP/1.1 200 OK\r\ncontent-length: ${length}\r\n\r\n`;
      for (const [seed, n] of [
        [60, 0],
        [61, 1],
        [62, 40],
        [63, 600],
      ] as const) {
        const stream = replyStream(seed, n);
        const { raw } = parseRaw(stream, Infinity, seed);
        const pairs: [Buffer, Buffer][] = [
          [renderRaw(raw, base64), renderRaw(raw, base64, head)],
          [rawResp2(raw), rawResp2(raw, head)],
        ];
        for (const [alone, headed] of pairs) {
          expect(headed.toString("latin1")).toBe(head(alone.length) + alone.toString("latin1"));
        }
      }
    },
  );

  it("renders an empty list as the Reply objects do", () => {
    const raw = new RawReplies();
    expect(renderRaw(raw, false).toString()).toBe("[]");
    expect(rawResp2(raw).length).toBe(0);
  });
});
