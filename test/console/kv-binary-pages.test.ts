import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Arg, Reply } from "../../src/shared/redis/resp.js";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import { eventually } from "../harness/eventually.js";
import { startRedis, testPool, type TestRedis } from "../harness/redis.js";
import { consoleEnv, type ConsoleEnv } from "./harness.js";
import { openKeyOn } from "./kv-helpers.js";

/**
 * Binary (not UTF-8) values and members edited in the KV browser, in chromium against a real
 * stashd whose `default` database is a test redis-server: the test writes and reads the bytes
 * over its own Redis connection, so what it asserts is what Redis holds, byte for byte.
 */
let kvRedis: TestRedis;
let direct: RedisPool;
let env: ConsoleEnv;
let page: Page;

beforeAll(async () => {
  kvRedis = await startRedis();
  direct = testPool(kvRedis.url);
  env = await consoleEnv({ start: { kvRedisUrl: kvRedis.url } });
  page = await env.newPage();
  await env.login(page);
});
afterAll(async () => {
  await env?.close();
  await direct?.close();
  await kvRedis?.stop();
});

const hex = (h: string) => Buffer.from(h, "hex");
const run = (...args: Arg[]) => direct.exec(args);
/** A reply's strings as hex (arrays element by element), as Redis holds them. */
function bytes(r: Reply): unknown {
  if (r.kind === "bulk" || r.kind === "simple") return r.value.toString("hex");
  if (r.kind === "array") return r.value.map(bytes);
  if (r.kind === "nil") return null;
  return r.value;
}
const read = async (...args: Arg[]) => bytes(await run(...args));
const panel = () => page.locator("aside.panel");
const rowOf = (text: string) => panel().locator("tbody tr", { hasText: text });
const toast = (text: string) => page.locator(".toast", { hasText: text }).first().waitFor();

test("a binary string is shown as hex, edited as hex and saved as those bytes", async () => {
  await run("SET", "bin-str", hex("ff000180"));
  await openKeyOn(env, page, "bin-str");
  const value = panel().locator("textarea[name=value]");
  await panel().getByText("Binary value (not UTF-8), shown and edited as hex").waitFor();
  await expect(value.inputValue()).resolves.toBe("ff000180");
  const save = panel().locator(".editor").getByRole("button", { name: "Save" });
  await value.fill("ff00zz");
  await save.click();
  await toast("hex must be pairs of digits");
  expect(await read("GET", "bin-str")).toBe("ff000180");
  await value.fill("DE AD be ef 00 c3");
  await save.click();
  await eventually(async () => expect(await read("GET", "bin-str")).toBe("deadbeef00c3"));
  await eventually(async () => expect(await value.inputValue()).toBe("deadbeef00c3"));
});

test("hash: binary fields and values are edited and removed by their exact bytes", async () => {
  await run("HSET", "bin-hash", hex("ff0001"), "v", "Grüße", hex("ff0001"), hex("fe"), hex("80"));
  await openKeyOn(env, page, "bin-hash");
  // A binary field with a text value: the value is edited as text.
  const binField = rowOf("ff0001").filter({ hasNotText: "Grüße" });
  await binField.locator("td").first().getByText("hex").waitFor();
  await binField.getByLabel("value of ff0001").fill("w ☕");
  await binField.getByRole("button", { name: "Save" }).click();
  await eventually(async () =>
    expect(await read("HGET", "bin-hash", hex("ff0001"))).toBe(Buffer.from("w ☕").toString("hex")),
  );
  // A text field with a binary value: the value is edited as hex.
  const grusse = rowOf("Grüße");
  await expect(grusse.getByLabel("value of Grüße").inputValue()).resolves.toBe("ff0001");
  await grusse.getByLabel("value of Grüße").fill("ff02");
  await grusse.getByRole("button", { name: "Save" }).click();
  await eventually(async () => expect(await read("HGET", "bin-hash", "Grüße")).toBe("ff02"));
  // Field fe = 80: removed by its bytes.
  await rowOf("fe").getByRole("button", { name: "Remove" }).click();
  await eventually(async () => expect(await read("HEXISTS", "bin-hash", hex("fe"))).toBe("0"));
  expect(await read("HLEN", "bin-hash")).toBe("2");
  // A field added as hex.
  await panel().locator("input[name=add-hex]").check();
  await panel().locator("input[name=add-field]").fill("c0c1");
  await panel().locator("input[name=add-value]").fill("00");
  await panel().getByRole("button", { name: "Add" }).click();
  await eventually(async () => expect(await read("HGET", "bin-hash", hex("c0c1"))).toBe("00"));
  await env.shot(page, "kv-binary-hash");
});

test("list, set, sorted set and stream: binary members edited, removed and added as bytes", async () => {
  await run("RPUSH", "bin-list", "ok", hex("ff0001"), hex("ff0001"));
  await openKeyOn(env, page, "bin-list");
  // Inputs hold the values: rows are found by index (the label column).
  const second = panel().locator("tbody tr").nth(1);
  await expect(second.getByLabel("value of 1").inputValue()).resolves.toBe("ff0001");
  await second.getByLabel("value of 1").fill("c0 C1");
  await second.getByRole("button", { name: "Save" }).click();
  await eventually(async () =>
    expect(await read("LRANGE", "bin-list", "0", "-1")).toEqual(["6f6b", "c0c1", "ff0001"]),
  );
  await eventually(async () =>
    expect(await panel().getByLabel("value of 1").inputValue()).toBe("c0c1"),
  );
  await panel().locator("tbody tr").nth(2).getByRole("button", { name: "Remove" }).click();
  await eventually(async () =>
    expect(await read("LRANGE", "bin-list", "0", "-1")).toEqual(["6f6b", "c0c1"]),
  );

  await run("SADD", "bin-set", hex("ff0001"), "東京");
  await openKeyOn(env, page, "bin-set");
  // A UTF-8 member stays text beside a binary one.
  await panel().locator("tr:not(.binary)", { hasText: "東京" }).waitFor();
  await panel().locator("tr.binary", { hasText: "ff0001" }).getByText("hex").waitFor();
  await rowOf("ff0001").getByRole("button", { name: "Remove" }).click();
  await eventually(async () =>
    expect(await read("SMEMBERS", "bin-set")).toEqual([Buffer.from("東京").toString("hex")]),
  );
  await panel().locator("input[name=add-hex]").check();
  await panel().locator("input[name=add-field]").fill("80 81");
  await panel().getByRole("button", { name: "Add" }).click();
  await eventually(async () => expect(await read("SISMEMBER", "bin-set", hex("8081"))).toBe("1"));

  await run("ZADD", "bin-zset", "1", hex("ff"), "2", "a");
  await openKeyOn(env, page, "bin-zset");
  await rowOf("ff").getByLabel("value of ff").fill("5");
  await rowOf("ff").getByRole("button", { name: "Save" }).click();
  await eventually(async () =>
    expect(await read("ZSCORE", "bin-zset", hex("ff"))).toBe(Buffer.from("5").toString("hex")),
  );
  await rowOf("ff").getByRole("button", { name: "Remove" }).click();
  await eventually(async () => expect(await read("ZCARD", "bin-zset")).toBe("1"));
  expect(await read("ZSCORE", "bin-zset", "a")).toBe(Buffer.from("2").toString("hex"));

  await run("XADD", "bin-stream", "1-1", hex("ff00"), hex("80"));
  await run("XADD", "bin-stream", "2-1", "text", "kept");
  await openKeyOn(env, page, "bin-stream");
  await rowOf("1-1").getByText("ff00=80").waitFor();
  await rowOf("1-1").getByRole("button", { name: "Remove" }).click();
  await eventually(async () => expect(await read("XLEN", "bin-stream")).toBe("1"));
  expect(await read("XRANGE", "bin-stream", "-", "+")).toEqual([
    ["322d31", [Buffer.from("text").toString("hex"), Buffer.from("kept").toString("hex")]],
  ]);
  // An entry added with its field and value typed as hex holds those bytes.
  await panel().locator("input[name=add-hex]").check();
  await panel().locator("input[name=add-field]").fill("fe01");
  await panel().locator("input[name=add-value]").fill("00 ff");
  await panel().getByRole("button", { name: "Add" }).click();
  await eventually(async () => expect(await read("XLEN", "bin-stream")).toBe("2"));
  const entries = (await read("XRANGE", "bin-stream", "-", "+")) as [string, string[]][];
  expect(entries[1]?.[1]).toEqual(["fe01", "00ff"]);
});

test("a binary member changed elsewhere since it was loaded is not overwritten", async () => {
  await run("HSET", "bin-race", "f", hex("ff01"));
  await openKeyOn(env, page, "bin-race");
  await expect(rowOf("f").getByLabel("value of f").inputValue()).resolves.toBe("ff01");
  await run("HSET", "bin-race", "f", hex("ff02"));
  await rowOf("f").getByLabel("value of f").fill("ff03");
  await rowOf("f").getByRole("button", { name: "Save" }).click();
  await panel().locator("[data-stale]").waitFor();
  expect(await read("HGET", "bin-race", "f")).toBe("ff02");
  await rowOf("f").getByRole("button", { name: "Remove" }).click();
  await toast("changed since it was loaded");
  expect(await read("HGET", "bin-race", "f")).toBe("ff02");
});

test("members that look like markup stay inert text", async () => {
  const markup = '<img src=x onerror="document.body.dataset.pwned=1">';
  await run("HSET", "bin-markup", markup, hex("ff3c62"));
  await openKeyOn(env, page, "bin-markup");
  await rowOf(markup).waitFor();
  expect(await panel().locator("img").count()).toBe(0);
  expect(await page.evaluate<string | undefined>("document.body.dataset.pwned")).toBeUndefined();
});

test("multi-line values are edited in a text box that keeps their line breaks; CR as hex", async () => {
  await run("HSET", "lines-hash", "poem", "one\ntwo\n", "crlf", "a\r\nb");
  await run("RPUSH", "lines-list", "x\ny");
  await openKeyOn(env, page, "lines-hash");
  const poem = rowOf("poem").locator("textarea");
  await expect(poem.inputValue()).resolves.toBe("one\ntwo\n");
  await poem.fill("one\ntwo\nthree");
  await rowOf("poem").getByRole("button", { name: "Save" }).click();
  await eventually(async () =>
    expect(await read("HGET", "lines-hash", "poem")).toBe(
      Buffer.from("one\ntwo\nthree").toString("hex"),
    ),
  );
  // A carriage return is kept only as bytes: the value is shown and edited as hex.
  const crlf = rowOf("crlf").getByLabel("value of crlf");
  await expect(crlf.inputValue()).resolves.toBe("610d0a62");
  await crlf.fill("610d0a6221");
  await rowOf("crlf").getByRole("button", { name: "Save" }).click();
  await eventually(async () => expect(await read("HGET", "lines-hash", "crlf")).toBe("610d0a6221"));
  await env.shot(page, "kv-multiline-hash");
  // The same text box for a list element.
  await openKeyOn(env, page, "lines-list");
  const element = panel().locator("tbody tr").first().locator("textarea");
  await expect(element.inputValue()).resolves.toBe("x\ny");
  await element.fill("x\ny\nz");
  await panel().locator("tbody tr").first().getByRole("button", { name: "Save" }).click();
  await eventually(async () =>
    expect(await read("LINDEX", "lines-list", "0")).toBe(Buffer.from("x\ny\nz").toString("hex")),
  );
});
