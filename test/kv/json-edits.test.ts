import { describe, expect, it } from "vitest";
import { err, ok, useJsonGateway } from "./json-helpers.js";

/** The JSON group's edits over raw HTTP, on a Redis without the JSON module. */
const { run } = useJsonGateway();

describe("JSON write commands", () => {
  it("edits numbers, strings and booleans with per-match replies", async () => {
    await run(
      "JSON.SET",
      "j:w",
      "$",
      '{"a":"b","b":[{"a":2},{"a":5},{"a":"c"}],"t":true,"s":"ab"}',
    );
    expect(await run("JSON.NUMINCRBY", "j:w", "$..a", 2)).toEqual(ok("[4,7,null,null]"));
    expect(await run("JSON.NUMINCRBY", "j:w", ".b[0].a", 1.5)).toEqual(ok("5.5"));
    expect(await run("JSON.NUMMULTBY", "j:w", "$.b[1].a", 2)).toEqual(ok("[14]"));
    expect(await run("JSON.NUMINCRBY", "j:w", ".a", 1)).toEqual(
      err("ERR Path '$.a' does not exist or does not contains a number"),
    );
    expect(await run("JSON.STRAPPEND", "j:w", "$.s", '"cd"')).toEqual(ok([4]));
    expect(await run("JSON.STRAPPEND", "j:w", ".s", '"e"')).toEqual(ok(5));
    expect(await run("JSON.STRLEN", "j:w", "$..*")).toEqual(
      ok([null, null, 1, null, null, null, 1, null, null, 5]),
    );
    expect(await run("JSON.TOGGLE", "j:w", "$.t")).toEqual(ok([0]));
    expect(await run("JSON.TOGGLE", "j:w", ".t")).toEqual(ok("true"));
    expect(await run("JSON.TOGGLE", "j:w", "$.s")).toEqual(ok([null]));
    expect(await run("JSON.TYPE", "j:w", "$..a")).toEqual(
      ok(["number", "integer", "string", "string"]),
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
