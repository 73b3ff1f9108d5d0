import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { parseCommand, parseCommandList, readCommandList } from "./body-args.js";
import { normalizeScript, rewriteCommand, ScriptAliases } from "../commands/rewrite.js";
import { parseUrl, percentDecode } from "./url-args.js";

const text = (args: (Buffer | string)[]): string[] => args.map((a) => a.toString());

describe("JSON command bodies", () => {
  it("keeps number lexemes, booleans and escapes", async () => {
    expect(
      text(
        await parseCommand(
          Buffer.from(' [ "SET" , "k\\u00fc\\n", 12345678901234567890, -1.50e+3, true, false ] '),
        ),
      ),
    ).toEqual(["SET", "kü\n", "12345678901234567890", "-1.50e+3", "true", "false"]);
  });

  it("reads a list of commands", async () => {
    expect((await parseCommandList(Buffer.from('[["GET","a"],["INCR","b"]]'))).map(text)).toEqual([
      ["GET", "a"],
      ["INCR", "b"],
    ]);
  });

  it.each(["", "[", '["a",]', '["a" "b"]', "[01]", '["a"] x', '[["a",["b"]]]', '["\u0001"]'])(
    "refuses %j",
    async (body) => {
      await expect(parseCommandList(Buffer.from(body))).rejects.toThrow(/^ERR /);
    },
  );

  /** The same list after a first command of `pad` bytes (over 64 KiB: checked, then read lazily). */
  const padded = (rest: string, pad: number): Buffer =>
    Buffer.from(`[["SET","k","${"x".repeat(pad)}"],${rest}`);
  const refusal = (body: Buffer, max?: number): Promise<string> =>
    parseCommandList(body, max).then(
      () => "accepted",
      (err: Error) => err.message,
    );

  it.each([
    '["GET","a"]]',
    '["GET","a"],]',
    '["GET","a"] ["GET"]]',
    '"GET"]',
    "[]]",
    '["GET",["a"]]]',
    '["GET",null]]',
    '["GET",{}]]',
    '["GET","\\x"]]',
    '["GET","\\u12g4"]]',
    '["GET","\\u1234\\n\\/"]]',
    '["GET","a\u0001"]]',
    '["GET","unterminated]]',
    '["GET",01]]',
    '["GET","a"]] x',
    '["GET","a"],"x",[]]',
    '["GET","a"],[],"x"]',
    '["PING"],["PING"],["PING"]]',
    '["GET","a"',
  ])("gives the same answer for %j in a large body as in a small one", async (rest) => {
    const pad = 70_000;
    const shifted = (text: string): string =>
      text.replace(/at byte (\d+)/, (_, n: string) => `at byte ${Number(n) + pad - 10}`);
    expect(await refusal(padded(rest, pad))).toBe(shifted(await refusal(padded(rest, 10))));
    expect(await refusal(padded(rest, pad), 3)).toBe(shifted(await refusal(padded(rest, 10), 3)));
  });

  it("reads the same commands from a small body (JSON.parse) as from a large one (Reader)", async () => {
    const rest = [
      '["GET","a\\u00fc\\n"]',
      '[ "SET" , "k" , true , false ]',
      '["ECHO","\\"\\\\\\/\\b\\f\\n\\r\\t"]',
      '["ECHO","\\ud800x","\\ud83d\\ude00"]',
      '["ECHO","\x7f"]',
      '["ECHO",""]',
    ].join(",");
    const bytes = (commands: (Buffer | string)[][]): string[][] =>
      commands.map((c) => c.map((a) => Buffer.from(a).toString("hex")));
    const small = await parseCommandList(padded(`${rest}]`, 10));
    const large = await parseCommandList(padded(`${rest}]`, 70_000));
    expect(bytes(small.slice(1))).toEqual(bytes(large.slice(1)));
    expect(small.slice(1).map(text)[1]).toEqual(["SET", "k", "true", "false"]);
    expect(text(await parseCommand(Buffer.from('["SET","k",true,"\\u00e9"]')))).toEqual([
      "SET",
      "k",
      "true",
      "é",
    ]);
  });

  it.each([
    '[ "GET" , "a" ] , [ "SET","k","v" ] ]',
    '\t["GET",""],\r\n["ECHO","[],\x7f"]\n] \n',
    '["GET","a"],["ECHO","\\"]]',
    '["GET","a"],["SET","k",true]]',
    '["GET","a"],[]]',
    '["GET","a"],"GET"]',
    '["GET","a"],["GET",["a"]]]',
    '["GET","a"],["GET","a"]',
    '["GET","a"]],',
  ])("reads %j in a small body (scanned) as in a large one (Reader)", async (rest) => {
    const answer = async (body: Buffer): Promise<unknown> =>
      parseCommandList(body).then(
        (commands) => commands.slice(1).map((c) => c.map((a) => Buffer.from(a).toString("hex"))),
        (err: Error) => err.message.replace(/at byte \d+/, "at byte N"),
      );
    expect(await answer(padded(rest, 10))).toEqual(await answer(padded(rest, 70_000)));
  });

  it("reads a single command's strings as JSON.parse does", async () => {
    expect(text(await parseCommand(Buffer.from(' [ "SET" ,"k" , "" ]\n')))).toEqual([
      "SET",
      "k",
      "",
    ]);
    await expect(parseCommand(Buffer.from('["SET","k"'))).rejects.toThrow(/^ERR invalid JSON/);
  });

  it("hands out a large body's commands a slice at a time, as read in one go", async () => {
    const body = padded('["GET","a\\u00fc",1.50,true],["ECHO","é"]]', 70_000);
    const list = await readCommandList(body);
    expect(list.length).toBe(3);
    const slices = [list.take(2), list.take(2), list.take(2)];
    expect(slices.map((s) => s.length)).toEqual([2, 1, 0]);
    expect(slices.flat().map(text)).toEqual((await parseCommandList(body)).map(text));
    expect(text(slices[1]?.[0] ?? [])).toEqual(["ECHO", "é"]);
    expect(text(slices[0]?.[1] ?? [])).toEqual(["GET", "aü", "1.50", "true"]);
  });

  it("refuses a list longer than the command cap as soon as it passes it", async () => {
    const body = Buffer.from(JSON.stringify(Array.from({ length: 10 }, () => ["PING"])) + "junk");
    await expect(parseCommandList(body, 9)).rejects.toThrow(/^ERR max commands per request/);
    expect(await parseCommandList(body.subarray(0, body.length - 4), 10)).toHaveLength(10);
  });
});

describe("URL commands", () => {
  it("decodes segments one by one and reads the query", () => {
    const parts = parseUrl("//set/a%2Fb/%E2%82%AC+x/?EX=10&NX&_token=t%2B1&v=a+b");
    expect(text(parts.segments)).toEqual(["set", "a/b", "€+x"]);
    expect(text(parts.query)).toEqual(["EX", "10", "NX", "v", "a b"]);
    expect(parts.token).toBe("t+1");
  });

  it("leaves invalid escapes literal", () => {
    expect(percentDecode("%zz%4", false).toString()).toBe("%zz%4");
  });
});

describe("script rewrites", () => {
  it("drops only the Upstash-only shebang flag", () => {
    expect(
      normalizeScript(Buffer.from("#!lua flags=allow-key-locking\nreturn 1"))?.toString(),
    ).toBe("#!lua flags=\nreturn 1");
    expect(
      normalizeScript(Buffer.from("#!lua flags=no-writes,allow-key-locking\nreturn 1"))?.toString(),
    ).toBe("#!lua flags=no-writes\nreturn 1");
    expect(normalizeScript(Buffer.from("#!lua flags=no-writes\nreturn 1"))).toBeUndefined();
    expect(normalizeScript(Buffer.from("return 1"))).toBeUndefined();
  });

  it("maps EVALSHA of the original script to the rewritten one", () => {
    const sha1 = (s: string): string => createHash("sha1").update(s).digest("hex");
    const aliases = new ScriptAliases();
    const original = "#!lua flags=allow-key-locking\nreturn 1";
    expect(rewriteCommand(["EVALSHA", sha1(original), "0"], aliases)[1]).toBe(sha1(original));
    rewriteCommand(["EVAL", original, "0"], aliases);
    expect(rewriteCommand(["EVALSHA", sha1(original), "0"], aliases)[1]).toBe(
      sha1("#!lua flags=\nreturn 1"),
    );
  });
});
