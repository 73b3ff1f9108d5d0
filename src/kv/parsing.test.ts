import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { parseCommand, parseCommandList } from "./body-args.js";
import { normalizeScript, rewriteCommand, ScriptAliases } from "./rewrite.js";
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
