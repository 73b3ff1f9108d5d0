import { describe, expect, it } from "vitest";
import { command } from "./helpers.js";
import { err, ok, useJsonGateway } from "./json-helpers.js";

/** JSON commands in pipelines, transactions, with restricted tokens and under concurrency. */
const { stashd, run } = useJsonGateway();

describe("JSON commands in pipelines, transactions and with the read-only token", () => {
  it("runs in order inside /pipeline and /multi-exec", async () => {
    const pipe = await stashd().kvFetch("/pipeline", {
      body: JSON.stringify([
        ["JSON.SET", "j:p", "$", '{"n":1,"l":[]}'],
        ["JSON.NUMINCRBY", "j:p", "$.n", 1],
        ["JSON.ARRAPPEND", "j:p", "$.l", '"a"'],
        ["JSON.GET", "j:p"],
        ["JSON.GET", "j:p", ".nope"],
      ]),
    });
    expect(await pipe.json()).toEqual([
      ok("OK"),
      ok("[2]"),
      ok([1]),
      ok('{"n":2,"l":["a"]}'),
      err("ERR Path '$.nope' does not exist"),
    ]);
    const multi = await stashd().kvFetch("/multi-exec", {
      body: JSON.stringify([
        ["JSON.NUMMULTBY", "j:p", ".n", 10],
        ["JSON.ARRPOP", "j:p", ".l"],
        ["JSON.TYPE", "j:p", "$.n"],
        ["JSON.TOGGLE", "j:p", ".n"],
      ]),
    });
    expect(await multi.json()).toEqual([
      ok("20"),
      ok('"a"'),
      ok(["integer"]),
      err("ERR Path '$.n' does not exist or not a bool"),
    ]);
  });

  it("lets the read-only token read but not write", async () => {
    await run("JSON.SET", "j:ro", "$", '{"a":[1,2]}');
    const token = stashd().kv.readonlyToken;
    const read = await command(stashd(), ["JSON.GET", "j:ro", "$.a"], { token });
    expect(read.body).toEqual(ok("[[1,2]]"));
    const pipe = await stashd().kvFetch("/pipeline", {
      token,
      body: JSON.stringify([
        ["JSON.ARRLEN", "j:ro", ".a"],
        ["JSON.SET", "j:ro", "$.a", "1"],
      ]),
    });
    const items = (await pipe.json()) as unknown[];
    expect(items[0]).toEqual(ok(2));
    expect(items[1]).toEqual(
      err(expect.stringMatching(/^NOPERM .*'json.set'/) as unknown as string),
    );
    expect(await run("JSON.GET", "j:ro")).toEqual(ok('{"a":[1,2]}'));
  });

  it("names the JSON command when an ACL user may not run scripts, also in a transaction", async () => {
    const user = ["ACL", "SETUSER", "j:noscripts", "on", ">pw", "~j:*", "+@all", "-@scripting"];
    expect(await run(...user)).toEqual(ok("OK"));
    const minted = await run("ACL", "RESTTOKEN", "j:noscripts", "pw");
    const token = (minted as { result: string }).result;
    const single = await command(stashd(), ["JSON.GET", "j:ro"], { token });
    expect(single.body).toEqual(
      err(expect.stringMatching(/^NOPERM .*'json.get'/) as unknown as string),
    );
    const multi = await stashd().kvFetch("/multi-exec", {
      token,
      body: JSON.stringify([["JSON.DEL", "j:ro"]]),
    });
    expect(multi.status).toBe(400);
    expect(((await multi.json()) as { error: string }).error).toMatch(/NOPERM .*'json\.del'/);
    expect(await run("JSON.GET", "j:ro")).toEqual(ok('{"a":[1,2]}'));
    await run("ACL", "DELUSER", "j:noscripts");
  });

  it("loses no update under 50 parallel increments", async () => {
    await run("JSON.SET", "j:count", "$", '{"n":0,"log":[]}');
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        Promise.all([
          run("JSON.NUMINCRBY", "j:count", "$.n", 1),
          run("JSON.ARRAPPEND", "j:count", ".log", String(i)),
        ]),
      ),
    );
    expect(await run("JSON.GET", "j:count", ".n")).toEqual(ok("50"));
    expect(await run("JSON.ARRLEN", "j:count", ".log")).toEqual(ok(50));
  });
});
