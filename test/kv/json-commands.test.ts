import { describe, expect, it } from "vitest";
import { err, ok, useJsonGateway } from "./json-helpers.js";

/** JSON.SET / JSON.GET and paths over raw HTTP, on a Redis without the JSON module. */
const { run } = useJsonGateway();

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
    expect(await run("JSON.GET", "j:g", "$..a")).toEqual(ok("[true,2]"));
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
    // A missing parent is an error, as Upstash answers (upstash-redis-py's
    // test_set_nonexisting_path); RedisJSON 2 answers nil. XX still answers nil.
    for (const path of ["$.x.y", ".x.y", "x.y"]) {
      expect(await run("JSON.SET", "j:nx", path, "1")).toEqual(
        err("ERR missing key at non-terminal path level"),
      );
    }
    expect(await run("JSON.SET", "j:nx", "$.x.y", "1", "NX")).toEqual(
      err("ERR missing key at non-terminal path level"),
    );
    expect(await run("JSON.SET", "j:nx", "$.x.y", "1", "XX")).toEqual(ok(null));
    // A parent that exists but is no object takes nothing: nil, as before.
    expect(await run("JSON.SET", "j:nx", "$.a.y", "1")).toEqual(ok(null));
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
      /^Error occurred on position 2, /,
    );
  });
});
