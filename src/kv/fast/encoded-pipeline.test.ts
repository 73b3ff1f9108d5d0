import { describe, expect, it } from "vitest";
import { encodeCommands } from "../../shared/redis/resp.js";
import { readCommandList } from "../parse/body-args.js";
import { encodePipelineBody } from "./encoded-pipeline.js";

/** The bytes the general path sends for `body`: its commands read, then encoded. */
async function generalPath(body: Buffer): Promise<Buffer> {
  return encodeCommands((await readCommandList(body)).rest());
}

async function expectSameAsGeneralPath(text: string): Promise<void> {
  const body = Buffer.from(text, "latin1");
  const encoded = encodePipelineBody(body, 1000);
  expect(encoded, text).toBeDefined();
  expect(encoded?.commands.bytes.equals(await generalPath(body)), text).toBe(true);
  expect(encoded?.commands.count).toBe((await readCommandList(body)).length);
}

describe("a /pipeline body encoded straight into RESP", () => {
  it("sends the bytes the general path sends", async () => {
    const long = "k".repeat(200);
    const bodies = [
      '[["GET","k"]]',
      '[["SET","k","v"],["GET","k"],["DEL","k"]]',
      ' [ [ "GET" , "k" ] ,\n\t[ "MGET","a","b" ] ]\r\n',
      `[["SET","${long}","${"v".repeat(70)}"]]`,
      '[["SET","",""],["ECHO",""]]',
      `[[${Array.from({ length: 12 }, (_, i) => `"a${i}"`).join(",")}]]`,
      `[["ECHO","{'not' json}"]]`,
      '[["ECHO","x y ~!@#$%^&*()_+{}|:<>?[];,./"]]',
    ];
    for (const body of bodies) await expectSameAsGeneralPath(body);
  });

  it("matches the general path on generated pipelines", async () => {
    let seed = 7;
    const next = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const arg = (): string =>
      Array.from({ length: next(80) }, () => String.fromCharCode(0x20 + next(0x5e)))
        .join("")
        .replace(/["\\]/g, "x");
    for (let round = 0; round < 200; round++) {
      const commands = Array.from({ length: 1 + next(30) }, () => [
        ["GET", "SET", "get", "HSET"][next(4)] as string,
        ...Array.from({ length: next(14) }, arg),
      ]);
      await expectSameAsGeneralPath(JSON.stringify(commands));
    }
  });

  it("encodes the bodies whose RESP is largest for their size, up to the largest it takes", async () => {
    // Empty arguments double in RESP (`"",` -> `$0\r\n\r\n`), the most any body grows.
    const max = 64 * 1024;
    const many = (item: string, open: string, close: string): string => {
      const n = Math.floor((max - open.length - close.length + 1) / (item.length + 1));
      return `${open}${Array.from({ length: n }, () => item).join(",")}${close}`;
    };
    const wide = many('""', "[[", "]]"); // one command of about 21,800 empty arguments
    const tall = many('[""]', "[", "]"); // about 13,100 commands of one empty argument
    const digits = many('"0123456789"', "[[", "]]"); // 2-digit lengths, 5-digit count
    for (const text of [wide, tall, digits]) {
      expect(text.length).toBeLessThanOrEqual(max);
      const body = Buffer.from(text);
      const encoded = encodePipelineBody(body, 100_000);
      expect(encoded?.commands.bytes.equals(await generalPath(body))).toBe(true);
    }
  });

  it("gives the same bytes again after a larger body (the scratch is reused)", async () => {
    const small = Buffer.from('[["SET","key:1","value"],["GET","key:1"]]');
    const first = encodePipelineBody(small, 1000)?.commands.bytes;
    encodePipelineBody(Buffer.from(JSON.stringify([["SET", "k", "x".repeat(60_000)]])), 1000);
    expect(encodePipelineBody(small, 1000)?.commands.bytes).toEqual(first);
    expect(first?.equals(await generalPath(small))).toBe(true);
  });

  it("names each run of equal command names once, as sent", () => {
    const body = Buffer.from('[["GET","a"],["GET","b"],["get","c"],["SET","d","1"],["GET","e"]]');
    expect(encodePipelineBody(body, 1000)?.names).toEqual(["GET", "get", "SET", "GET"]);
  });

  it("leaves every other body to the general path", () => {
    const others = [
      '[["SET","k",1]]', // a number: its lexeme is kept by the general path
      '[["SET","k",true]]',
      '[["SET","k",null]]',
      '[["SET","k","a\\"b"]]', // an escape
      '[["SET","k","caf\u00e9"]]', // not ASCII
      '[["SET","k","a\tb"]]', // a control character inside a string
      "[[]]",
      "[]",
      '["GET","k"]',
      '[["GET","k"]',
      '[["GET","k"]]x',
      '[["GET","k"],]',
      '[["GET" "k"]]',
      '[{"GET":"k"}]',
      "",
    ];
    for (const text of others) {
      expect(encodePipelineBody(Buffer.from(text, "utf8"), 1000), text).toBeUndefined();
    }
    expect(encodePipelineBody(Buffer.from(JSON.stringify([["A".repeat(70_000)]])), 1000)).toBe(
      undefined,
    );
  });

  it("leaves more commands than allowed to the general path (which refuses them)", () => {
    const body = Buffer.from(JSON.stringify(Array.from({ length: 5 }, () => ["PING"])));
    expect(encodePipelineBody(body, 5)?.commands.count).toBe(5);
    expect(encodePipelineBody(body, 4)).toBeUndefined();
  });
});
