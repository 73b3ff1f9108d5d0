import { describe, expect, it } from "vitest";
import { bodyOf, command, useGateway } from "./helpers.js";

const { stashd } = useGateway();

describe("refused commands", () => {
  it.each([
    // Blocking commands are served on a connection of their own (test/kv/blocking.test.ts).
    ["WAIT", "0", "0"],
    ["WAITAOF", "0", "0", "0"],
    ["WATCH", "k"],
    ["UNWATCH"],
    ["DISCARD"],
    ["MULTI"],
    ["EXEC"],
    ["AUTH", "x"],
    ["SELECT", "1"],
    ["HELLO", "3"],
    ["CLIENT", "LIST"],
    ["RESET"],
    ["QUIT"],
    ["SUBSCRIBE", "c"],
    ["PSUBSCRIBE", "c*"],
    ["MONITOR"],
    ["CLUSTER", "INFO"],
    ["SHUTDOWN"],
    ["DEBUG", "SLEEP", "1"],
    ["CONFIG", "SET", "requirepass", "x"],
  ])("%s never reaches a pooled connection", async (...argv: string[]) => {
    const res = await command(stashd(), argv);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.stringMatching(/^ERR /) });
  });

  it("leaves pooled connections usable afterwards", async () => {
    await command(stashd(), ["SELECT", "3"]);
    await command(stashd(), ["MULTI"]);
    await command(stashd(), ["SET", "rf:k", "v"]);
    expect((await command(stashd(), ["GET", "rf:k"])).body).toEqual({ result: "v" });
  });

  it("allows PING, ECHO, non-blocking XREAD, PUBLISH and CONFIG GET", async () => {
    expect((await command(stashd(), ["PING"])).body).toEqual({ result: "PONG" });
    expect((await command(stashd(), ["ECHO", "hi"])).body).toEqual({ result: "hi" });
    await command(stashd(), ["XADD", "rf:s", "1-1", "f", "v"]);
    expect((await command(stashd(), ["XREAD", "COUNT", "1", "STREAMS", "rf:s", "0"])).body).toEqual(
      {
        result: [["rf:s", [["1-1", ["f", "v"]]]]],
      },
    );
    expect((await command(stashd(), ["PUBLISH", "nobody", "x"])).body).toEqual({ result: 0 });
    expect((await command(stashd(), ["CONFIG", "GET", "maxmemory"])).body).toEqual({
      result: ["maxmemory", "0"],
    });
  });
});

describe("what popular clients send that Redis refuses", () => {
  const script = "#!lua flags=allow-key-locking\nreturn redis.call('INCR', KEYS[1])";

  it("strips the allow-key-locking shebang flag and aliases the client's SHA", async () => {
    const { createHash } = await import("node:crypto");
    const sha = createHash("sha1").update(script).digest("hex");
    expect((await command(stashd(), ["EVALSHA", sha, "1", "rf:lua"])).body).toEqual({
      error: expect.stringMatching(/^NOSCRIPT/),
    });
    expect((await command(stashd(), ["EVAL", script, "1", "rf:lua"])).body).toEqual({ result: 1 });
    expect((await command(stashd(), ["EVALSHA", sha, "1", "rf:lua"])).body).toEqual({ result: 2 });
    const loaded = await command(stashd(), [
      "SCRIPT",
      "LOAD",
      "#!lua flags=no-writes,allow-key-locking\nreturn 7",
    ]);
    expect(loaded.status).toBe(200);
    const ro = await command(stashd(), [
      "EVAL_RO",
      "#!lua flags=no-writes,allow-key-locking\nreturn 7",
      "0",
    ]);
    expect(ro.body).toEqual({ result: 7 });
  });

  it("answers SCAN … WITHTYPE with [cursor, [key, type, …]]", async () => {
    await command(stashd(), ["SET", "wt:str", "v"]);
    await command(stashd(), ["RPUSH", "wt:list", "v"]);
    const res = await command(stashd(), [
      "SCAN",
      "0",
      "MATCH",
      "wt:*",
      "COUNT",
      "1000",
      "WITHTYPE",
    ]);
    const [cursor, flat] = (res.body as { result: [string, string[]] }).result;
    expect(cursor).toBe("0");
    const pairs = new Map<string, string>();
    for (let i = 0; i < flat.length; i += 2) pairs.set(flat[i] as string, flat[i + 1] as string);
    expect(Object.fromEntries(pairs)).toEqual({ "wt:str": "string", "wt:list": "list" });
  });

  it("answers SCAN … WITHTYPE inside /multi-exec the same way", async () => {
    await command(stashd(), ["SET", "wtm:str", "v"]);
    await command(stashd(), ["SADD", "wtm:set", "m"]);
    const res = await stashd().kvFetch("/multi-exec", {
      body: JSON.stringify([
        ["SCAN", "0", "MATCH", "wtm:*", "COUNT", "1000", "WITHTYPE"],
        ["GET", "wtm:str"],
      ]),
    });
    const [scan, get] = (await bodyOf(res)) as [{ result: [string, string[]] }, unknown];
    const flat = scan.result[1];
    const pairs: Record<string, string> = {};
    for (let i = 0; i < flat.length; i += 2) pairs[flat[i] as string] = flat[i + 1] as string;
    expect(pairs).toEqual({ "wtm:str": "string", "wtm:set": "set" });
    expect(get).toEqual({ result: "v" });
  });
});
