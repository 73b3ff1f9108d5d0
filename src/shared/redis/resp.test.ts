import { describe, expect, it } from "vitest";
import {
  encodeCommand,
  encodeCommandPieces,
  encodeCommands,
  encodeMixed,
  EncodedCommands,
  REPLY_TOO_LARGE,
  RespParser,
  serializeReply,
  type Reply,
} from "./resp.js";

function parseAll(chunks: Buffer[]): Reply[] {
  const out: Reply[] = [];
  const parser = new RespParser((r) => out.push(r));
  for (const c of chunks) parser.feed(c);
  return out;
}

const WIRE = Buffer.from(
  "+OK\r\n-ERR bad\r\n:9223372036854775807\r\n$-1\r\n*-1\r\n*0\r\n$5\r\nhe\r\no\r\n*2\r\n*1\r\n:1\r\n$3\r\n\x00\xff\x80\r\n",
  "latin1",
);

describe("RespParser", () => {
  it("parses every reply type, byte-exact", () => {
    const replies = parseAll([WIRE]);
    expect(replies).toHaveLength(8);
    expect(replies[2]).toEqual({ kind: "int", value: "9223372036854775807" });
    expect(replies[3]).toEqual({ kind: "nil", array: false });
    expect(replies[4]).toEqual({ kind: "nil", array: true });
    expect((replies[6] as { value: Buffer }).value.toString()).toBe("he\r\no");
    expect(Buffer.concat(replies.map(serializeReply)).equals(WIRE)).toBe(true);
  });

  it("gives the same result when fed one byte at a time", () => {
    const bytes = [...WIRE].map((b) => Buffer.from([b]));
    expect(Buffer.concat(parseAll(bytes).map(serializeReply)).equals(WIRE)).toBe(true);
  });

  it("joins a large bulk string split over many chunks", () => {
    const big = Buffer.alloc(1 << 20, 0x61);
    const wire = Buffer.concat([Buffer.from(`$${big.length}\r\n`), big, Buffer.from("\r\n")]);
    const chunks: Buffer[] = [];
    for (let i = 0; i < wire.length; i += 65536) chunks.push(wire.subarray(i, i + 65536));
    const [reply] = parseAll(chunks);
    expect(reply?.kind === "bulk" && reply.value.equals(big)).toBe(true);
  });

  it("drops a reply over its budget, keeps the stream in step, byte by byte or at once", () => {
    const big = `$${5000}\r\n${"x".repeat(5000)}\r\n`;
    const array = `*3\r\n:1\r\n${big}+after\r\n`;
    const wire = Buffer.from(`${big}${array}+OK\r\n$2\r\nhi\r\n`);
    for (const step of [1, 7, 4096, wire.length]) {
      const out: Reply[] = [];
      const parser = new RespParser(
        (r) => out.push(r),
        () => 1000,
      );
      for (let i = 0; i < wire.length; i += step) parser.feed(wire.subarray(i, i + step));
      expect(out.map((r) => r.kind)).toEqual(["error", "error", "simple", "bulk"]);
      expect((out[0] as { value: string }).value.startsWith(REPLY_TOO_LARGE)).toBe(true);
      expect((out[3] as { value: Buffer }).value.toString()).toBe("hi");
    }
  });

  it("encodes commands with string and binary arguments", () => {
    expect(encodeCommand(["SET", "k", Buffer.from([0, 1]), "ü"]).toString("latin1")).toBe(
      "*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\n\x00\x01\r\n$2\r\n\xc3\xbc\r\n",
    );
  });

  it("encodes every kind of string as its UTF-8 bytes, at every length", () => {
    const reference = (args: (string | Buffer)[]): Buffer =>
      Buffer.concat([
        Buffer.from(`*${args.length}\r\n`),
        ...args.flatMap((a) => {
          const bytes = typeof a === "string" ? Buffer.from(a) : a;
          return [Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from("\r\n")];
        }),
      ]);
    const strings = [
      "",
      "k",
      "x".repeat(9),
      "x".repeat(10),
      "x".repeat(64),
      "x".repeat(65),
      "x".repeat(100),
      "x".repeat(1000),
      "\x7f\x00\r\n",
      "ü",
      "€".repeat(30),
      "a".repeat(63) + "é",
      "😀",
      "\ud800",
      "x\udc00y",
      "é".repeat(200),
    ];
    const commands = [strings, ["SET", Buffer.from([0xff, 0]), ...strings], Array(12).fill("a")];
    for (const command of commands) expect(encodeCommand(command)).toEqual(reference(command));
    expect(encodeCommands(commands)).toEqual(Buffer.concat(commands.map(reference)));
    // More arguments than the kept scratch space holds, then a small call again.
    const many = Array.from({ length: 70_000 }, (_, i) => (i % 7 === 0 ? "é" : String(i)));
    expect(encodeCommand(many)).toEqual(reference(many));
    expect(encodeCommand(strings)).toEqual(reference(strings));
  });

  it("encodes several commands into one buffer, byte for byte as one at a time", () => {
    const commands = [["GET", "a"], ["SET", Buffer.from([255]), "ü"], [], ["PING"]];
    const oneByOne = Buffer.concat(commands.map((c) => encodeCommand(c)));
    expect(encodeCommands(commands).equals(oneByOne)).toBe(true);
    expect(
      encodeCommands([
        ["GET", "a"],
        ["GET", "b"],
      ]).toString(),
    ).toBe("*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2\r\n$3\r\nGET\r\n$1\r\nb\r\n");
  });
  it("passes large Buffer arguments as pieces of their own, the same bytes in order", () => {
    const big = Buffer.alloc(100, 7);
    const other = Buffer.alloc(40, 9);
    const commands = [["EVALSHA", "x", big, "1"], ["SET", other, big], ["PING"]];
    const pieces = encodeCommandPieces(commands, 50);
    expect(Buffer.concat(pieces).equals(encodeCommands(commands))).toBe(true);
    // Not copied: the very buffer, twice; the small one is copied into the encoding.
    expect(pieces.filter((p) => p === big)).toHaveLength(2);
    expect(pieces).not.toContain(other);
    expect(encodeCommandPieces([["GET", "a"]], 50)).toHaveLength(1);
  });
});

describe("commands already encoded", () => {
  const encoded = new EncodedCommands(
    encodeCommands([
      ["GET", "key"],
      ["SET", "k1", "v".repeat(100)],
    ]),
    2,
  );

  it("encodeMixed keeps the order of plain and encoded entries", () => {
    const mixed = encodeMixed([["PING"], encoded, ["ECHO", "a"], ["ECHO", "b"], encoded]);
    const expected = encodeCommands([
      ["PING"],
      ["GET", "key"],
      ["SET", "k1", "v".repeat(100)],
      ["ECHO", "a"],
      ["ECHO", "b"],
      ["GET", "key"],
      ["SET", "k1", "v".repeat(100)],
    ]);
    expect(mixed.equals(expected)).toBe(true);
    expect(encodeMixed([encoded])).toBe(encoded.bytes);
  });
});
