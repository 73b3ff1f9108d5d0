import { describe, expect, it } from "vitest";
import { command, useGateway } from "./helpers.js";

/** The JSON group over raw HTTP on a Redis without the JSON module (stashd's Lua scripts). */
const { stashd } = useGateway();

const run = async (...argv: unknown[]): Promise<unknown> => {
  const { body } = await command(stashd(), argv);
  return body;
};
const ok = (result: unknown): { result: unknown } => ({ result });
const err = (error: string): { error: string } => ({ error });

const DOC =
  '{"a":2,"nested":{"a":true,"b":[1,2.50,"x\\u00e9"]},"foo":"bar","big":12345678901234567890}';

describe("JSON.SET / JSON.GET", () => {
  it("stores canonical JSON text in a plain string, keeping key order and number lexemes", async () => {
    expect(await run("JSON.SET", "j:doc", "$", DOC)).toEqual(ok("OK"));
    const text =
      '{"a":2,"nested":{"a":true,"b":[1,2.5,"xé"]},"foo":"bar","big":12345678901234567890}';
    expect(await run("JSON.GET", "j:doc")).toEqual(ok(text));
    expect(await run("GET", "j:doc")).toEqual(ok(text));
    expect(await run("TYPE", "j:doc")).toEqual(ok("string"));
  });

  it("answers legacy paths with one value and JSONPath with every match", async () => {
    await run("JSON.SET", "j:g", ".", DOC);
    expect(await run("JSON.GET", "j:g", ".nested.b")).toEqual(ok('[1,2.5,"xé"]'));
    expect(await run("JSON.GET", "j:g", "nested.b[0]")).toEqual(ok("1"));
    expect(await run("JSON.GET", "j:g", "$..a")).toEqual(ok("[2,true]"));
    expect(await run("JSON.GET", "j:g", "$.none")).toEqual(ok("[]"));
    expect(await run("JSON.GET", "j:g", ".none")).toEqual(err("ERR Path '$.none' does not exist"));
    expect(await run("JSON.GET", "j:g", ".a", ".foo")).toEqual(ok('{".a":2,".foo":"bar"}'));
    expect(await run("JSON.GET", "j:g", "$.a", ".foo")).toEqual(ok('{"$.a":[2],".foo":["bar"]}'));
    expect(await run("JSON.GET", "j:g", "$.nested.b[?(@ > 1)]")).toEqual(ok("[2.5]"));
    expect(await run("JSON.GET", "j:g", "$.nested.b[-1:]")).toEqual(ok('["xé"]'));
    expect(await run("JSON.GET", "j:missing", "$")).toEqual(ok(null));
    const pretty = await run(
      "JSON.GET",
      "j:g",
      "INDENT",
      "  ",
      "NEWLINE",
      "\n",
      "SPACE",
      " ",
      "$.nested.b",
    );
    expect(pretty).toEqual(ok('[\n  [\n    1,\n    2.5,\n    "xé"\n  ]\n]'));
  });

  it("evaluates filters, slices, unions and recursive descent", async () => {
    const items =
      '[{"id":1,"price":10,"active":true,"tag":"a"},{"id":2,"price":15,"active":true,"tag":"b"},{"id":3,"price":5,"active":false}]';
    await run("JSON.SET", "j:f", "$", `{"items":${items},"max":12}`);
    const get = (path: string): Promise<unknown> => run("JSON.GET", "j:f", path);
    expect(await get("$.items[?(@.price < 12 && @.active == true)].id")).toEqual(ok("[1]"));
    expect(await get("$..[?(@.tag)].id")).toEqual(ok("[1,2]"));
    expect(await get("$.items[?(@.price < $.max)].id")).toEqual(ok("[1,3]"));
    expect(await get("$.items[?(@.tag == 'b' || !(@.price > 6))].id")).toEqual(ok("[2,3]"));
    expect(await get("$.items[0:2].id")).toEqual(ok("[1,2]"));
    expect(await get("$.items[::2].id")).toEqual(ok("[1,3]"));
    expect(await get("$.items[0,2].id")).toEqual(ok("[1,3]"));
    expect(await get("$.items[*]['id','tag']")).toEqual(ok('[1,"a",2,"b",3]'));
    expect(await get("$..price")).toEqual(ok("[10,15,5]"));
    expect(await run("JSON.NUMINCRBY", "j:f", "$.items[?(@.active == false)].price", 1)).toEqual(
      ok("[6]"),
    );
  });

  it("honours NX and XX, creates members only at the last step, and roots new keys", async () => {
    expect(await run("JSON.SET", "j:nx", "$.a", "1")).toEqual(
      err("ERR new objects must be created at the root"),
    );
    expect(await run("JSON.SET", "j:nx", "$", "{}", "XX")).toEqual(ok(null));
    expect(await run("JSON.SET", "j:nx", "$", '{"a":1}', "NX")).toEqual(ok("OK"));
    expect(await run("JSON.SET", "j:nx", "$", "{}", "NX")).toEqual(ok(null));
    expect(await run("JSON.SET", "j:nx", "$.a", "2", "NX")).toEqual(ok(null));
    expect(await run("JSON.SET", "j:nx", "$.b", "3", "XX")).toEqual(ok(null));
    expect(await run("JSON.SET", "j:nx", "$.b", "3", "NX")).toEqual(ok("OK"));
    expect(await run("JSON.SET", "j:nx", ".a", "4", "XX")).toEqual(ok("OK"));
    expect(await run("JSON.SET", "j:nx", "$.x.y", "1")).toEqual(ok(null));
    expect(await run("JSON.GET", "j:nx")).toEqual(ok('{"a":4,"b":3}'));
    expect(await run("JSON.SET", "j:nx", "$..z", "1")).toEqual(err("Err wrong static path"));
    await run("JSON.SET", "j:nx", "$.l", "[1]");
    expect(await run("JSON.SET", "j:nx", "$.l[3]", "1")).toEqual(
      err("ERR array index out of range"),
    );
    expect(await run("JSON.SET", "j:nx", "$.l[-1]", "2")).toEqual(ok("OK"));
    expect(await run("JSON.SET", "j:nx", "['q']", '"s"')).toEqual(ok("OK"));
    expect(await run("JSON.GET", "j:nx")).toEqual(ok('{"a":4,"b":3,"l":[2],"q":"s"}'));
  });

  it("refuses bad JSON, bad paths, bad options and keys of other types", async () => {
    expect(await run("JSON.SET", "j:bad", "$", '{"a":')).toEqual(
      err("EOF while parsing a value at line 1 column 5"),
    );
    expect(await run("JSON.SET", "j:bad", "$", "nope")).toEqual(
      err("expected value at line 1 column 1"),
    );
    expect(await run("JSON.SET", "j:bad", "$", "1", "PX")).toEqual(err("ERR syntax error"));
    const deep = (n: number): string => "[".repeat(n) + "]".repeat(n);
    expect(await run("JSON.SET", "j:bad", "$", deep(128))).toEqual(ok("OK"));
    expect(await run("JSON.SET", "j:bad", "$", deep(129))).toEqual(
      err("recursion limit exceeded at line 1 column 129"),
    );
    expect(await run("JSON.SET", "j:bad")).toEqual(
      err("ERR wrong number of arguments for 'json.set' command"),
    );
    await run("HSET", "j:hash", "f", "v");
    expect(await run("JSON.GET", "j:hash")).toEqual(
      err("WRONGTYPE Operation against a key holding the wrong kind of value"),
    );
    await run("JSON.SET", "j:bad", "$", "{}");
    expect(((await run("JSON.GET", "j:bad", "$[")) as { error: string }).error).toMatch(
      /^ERR JSON Path error/,
    );
  });
});

describe("JSON write commands", () => {
  it("edits numbers, strings and booleans with per-match replies", async () => {
    await run(
      "JSON.SET",
      "j:w",
      "$",
      '{"a":"b","b":[{"a":2},{"a":5},{"a":"c"}],"t":true,"s":"ab"}',
    );
    expect(await run("JSON.NUMINCRBY", "j:w", "$..a", 2)).toEqual(ok("[null,4,7,null]"));
    expect(await run("JSON.NUMINCRBY", "j:w", ".b[0].a", 1.5)).toEqual(ok("5.5"));
    expect(await run("JSON.NUMMULTBY", "j:w", "$.b[1].a", 2)).toEqual(ok("[14]"));
    expect(await run("JSON.NUMINCRBY", "j:w", ".a", 1)).toEqual(
      err("ERR Path '$.a' does not exist or does not contains a number"),
    );
    expect(await run("JSON.STRAPPEND", "j:w", "$.s", '"cd"')).toEqual(ok([4]));
    expect(await run("JSON.STRAPPEND", "j:w", ".s", '"e"')).toEqual(ok(5));
    expect(await run("JSON.STRLEN", "j:w", "$..*")).toEqual(
      ok([1, null, null, 5, null, null, null, null, null, 1]),
    );
    expect(await run("JSON.TOGGLE", "j:w", "$.t")).toEqual(ok([0]));
    expect(await run("JSON.TOGGLE", "j:w", ".t")).toEqual(ok("true"));
    expect(await run("JSON.TOGGLE", "j:w", "$.s")).toEqual(ok([null]));
    expect(await run("JSON.TYPE", "j:w", "$..a")).toEqual(
      ok(["string", "number", "integer", "string"]),
    );
    expect(await run("JSON.TYPE", "j:w", ".t")).toEqual(ok("boolean"));
    expect(await run("JSON.NUMINCRBY", "j:w", "$.b[0].a", '"x"')).toEqual(err("bad input number"));
    expect(await run("JSON.STRAPPEND", "j:w", "$.s", "1")).toEqual(
      err("WRONGTYPE wrong type of path value - expected string but found 1"),
    );
    expect(await run("JSON.NUMINCRBY", "j:none", "$.a", 1)).toEqual(
      err("ERR could not perform this operation on a key that doesn't exist"),
    );
  });

  it("edits arrays", async () => {
    await run("JSON.SET", "j:arr", "$", '{"a":[1,2,3,4,5],"o":{"x":1}}');
    expect(await run("JSON.ARRAPPEND", "j:arr", "$.a", "6", '"s"')).toEqual(ok([7]));
    expect(await run("JSON.ARRAPPEND", "j:arr", ".o", "1")).toEqual(
      err("ERR Path '.o' does not exist or not an array"),
    );
    expect(await run("JSON.ARRINSERT", "j:arr", ".a", 0, '"z"')).toEqual(ok(8));
    expect(await run("JSON.ARRINSERT", "j:arr", "$.a", 99, "1")).toEqual(
      err("ERR index out of bounds"),
    );
    expect(await run("JSON.ARRINDEX", "j:arr", "$.a", "3")).toEqual(ok([3]));
    expect(await run("JSON.ARRINDEX", "j:arr", ".a", '"s"')).toEqual(ok(7));
    expect(await run("JSON.ARRINDEX", "j:arr", "$.*", "9")).toEqual(ok([-1, null]));
    expect(await run("JSON.ARRPOP", "j:arr", "$.a")).toEqual(ok(['"s"']));
    expect(await run("JSON.ARRPOP", "j:arr", ".a", 0)).toEqual(ok('"z"'));
    expect(await run("JSON.ARRLEN", "j:arr", "$.*")).toEqual(ok([6, null]));
    expect(await run("JSON.ARRLEN", "j:arr", ".a")).toEqual(ok(6));
    expect(await run("JSON.ARRTRIM", "j:arr", "$.a", 1, -2)).toEqual(ok([4]));
    expect(await run("JSON.GET", "j:arr", ".a")).toEqual(ok("[2,3,4,5]"));
    expect(await run("JSON.ARRTRIM", "j:arr", ".a", 9, 10)).toEqual(ok(0));
    expect(await run("JSON.ARRPOP", "j:arr", ".a")).toEqual(ok(null));
  });

  it("reads and clears objects, deletes, merges, and answers RESP shapes", async () => {
    await run("JSON.SET", "j:o", "$", '{"o":{"x":1,"y":[1]},"n":3.5,"s":"v","t":false,"z":null}');
    expect(await run("JSON.OBJKEYS", "j:o", "$.o")).toEqual(ok([["x", "y"]]));
    expect(await run("JSON.OBJKEYS", "j:o")).toEqual(ok(["o", "n", "s", "t", "z"]));
    expect(await run("JSON.OBJLEN", "j:o", "$.*")).toEqual(ok([2, null, null, null, null]));
    expect(await run("JSON.OBJLEN", "j:o", ".o")).toEqual(ok(2));
    expect(await run("JSON.OBJLEN", "j:o", ".nothing")).toEqual(ok(null));
    expect(await run("JSON.OBJLEN", "j:o", ".n")).toEqual(
      err("WRONGTYPE wrong type of path value - expected object but found number"),
    );
    expect(await run("JSON.OBJKEYS", "j:o", ".s")).toEqual(
      err("ERR Path '$.s' does not exist or not an object"),
    );
    expect(await run("JSON.STRLEN", "j:o", ".n")).toEqual(
      err("WRONGTYPE wrong type of path value - expected string but found number"),
    );
    expect(await run("JSON.RESP", "j:o")).toEqual(
      ok(["{", "o", ["{", "x", 1, "y", ["[", 1]], "n", "3.5", "s", "v", "t", "false", "z", null]),
    );
    expect(await run("JSON.MERGE", "j:o", "$", '{"o":{"x":null,"w":2},"s":"new"}')).toEqual(
      ok("OK"),
    );
    expect(await run("JSON.GET", "j:o", "$.o")).toEqual(ok('[{"y":[1],"w":2}]'));
    expect(await run("JSON.MERGE", "j:o", "$.o.y", "null")).toEqual(ok("OK"));
    expect(await run("JSON.MERGE", "j:o", "$.o.y", '{"k":1}')).toEqual(ok("OK"));
    expect(await run("JSON.GET", "j:o", ".o")).toEqual(ok('{"w":2,"y":{"k":1}}'));
    expect(await run("JSON.CLEAR", "j:o", "$.*")).toEqual(ok(2));
    expect(await run("JSON.GET", "j:o")).toEqual(ok('{"o":{},"n":0,"s":"new","t":false,"z":null}'));
    expect(await run("JSON.CLEAR", "j:o", "$.o")).toEqual(ok(0));
    expect(await run("JSON.DEL", "j:o", "$.s")).toEqual(ok(1));
    expect(await run("JSON.FORGET", "j:o", ".nothing")).toEqual(ok(0));
    expect(await run("JSON.DEL", "j:o", "$..*")).toEqual(ok(4));
    expect(await run("JSON.GET", "j:o")).toEqual(ok("{}"));
    expect(await run("JSON.DEL", "j:o")).toEqual(ok(1));
    expect(await run("EXISTS", "j:o")).toEqual(ok(0));
  });

  it("does integer arithmetic exactly within i64 and in doubles otherwise", async () => {
    await run("JSON.SET", "j:big", "$", '{"a":9007199254740993,"d":123456789012,"f":1.5}');
    expect(await run("JSON.NUMINCRBY", "j:big", ".a", 1)).toEqual(ok("9007199254740994"));
    expect(await run("JSON.NUMMULTBY", "j:big", "$.d", 1000000)).toEqual(
      ok("[123456789012000000]"),
    );
    expect(await run("JSON.NUMINCRBY", "j:big", ".f", 0.5)).toEqual(ok("2.0"));
    expect(await run("JSON.NUMINCRBY", "j:big", ".a", "1.0")).toEqual(ok("9007199254740996.0"));
    expect(await run("JSON.GET", "j:big")).toEqual(
      ok('{"a":9007199254740996.0,"d":123456789012000000,"f":2.0}'),
    );
  });

  it("keeps the key's TTL across edits", async () => {
    await run("JSON.SET", "j:ttl", "$", '{"a":1}');
    await run("EXPIRE", "j:ttl", 1000);
    await run("JSON.NUMINCRBY", "j:ttl", "$.a", 1);
    expect(((await run("TTL", "j:ttl")) as { result: number }).result).toBeGreaterThan(900);
  });

  it("sets and gets several keys with MSET and MGET", async () => {
    expect(await run("JSON.MSET", "j:m1", "$", '{"a":1}', "j:m2", "$", '{"a":"x"}')).toEqual(
      ok("OK"),
    );
    expect(await run("JSON.MSET", "j:m1", "$.b", "2", "j:m3", "$.a", "1")).toEqual(
      err("ERR new objects must be created at the root"),
    );
    expect(await run("JSON.MGET", "j:m1", "j:m2", "j:m3", "$.a")).toEqual(
      ok(["[1]", '["x"]', null]),
    );
    expect(await run("JSON.MGET", "j:m1", "j:m2", ".a")).toEqual(ok(["1", '"x"']));
    await run("SET", "j:m4", "not json");
    await run("HSET", "j:m5", "f", "v");
    expect(await run("JSON.MGET", "j:m1", "j:m4", "j:m5", "$")).toEqual(
      ok(['[{"a":1}]', null, null]),
    );
    expect(await run("JSON.MGET", "j:m2", "j:m3", ".")).toEqual(ok(['{"a":"x"}', null]));
    expect(await run("JSON.MSET", "j:m1")).toEqual(
      err("ERR wrong number of arguments for 'json.mset' command"),
    );
  });
});

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
