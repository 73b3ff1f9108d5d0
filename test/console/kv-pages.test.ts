import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import { consoleEnv, type ConsoleEnv } from "./harness.js";
import { createDatabase, deleteDatabase } from "../../src/kv/databases/registry.js";
import { openKeyOn, redisOn } from "./kv-helpers.js";

/** The KV data browser in chromium against a real stashd database. */
let env: ConsoleEnv;
let page: Page;

beforeAll(async () => {
  env = await consoleEnv();
  const seed = [
    ["SET", "greeting", "hello"],
    ["HSET", "user:1", "name", "ann", "role", "admin"],
    ["RPUSH", "jobs", "a", "b", "c"],
    ["SADD", "tags", "red", "green"],
    ["ZADD", "scores", "1", "ann", "2", "bob"],
    ["XADD", "events", "*", "kind", "signup"],
    ["JSON.SET", "doc", "$", '{"a":1}'],
    ["SET", "temp", "x", "EX", "1000"],
  ];
  await env.q.stashd.kvFetch("/pipeline", { body: JSON.stringify(seed) });
  page = await env.newPage();
  await env.login(page);
});
afterAll(() => env?.close());

const redis = (...args: string[]) => redisOn(env, ...args);

const button = (name: string) => page.getByRole("button", { name, exact: true });
const panel = () => page.locator("aside.panel");
const keyRows = () => page.locator("table[aria-label=keys] tbody tr");

const openKey = (key: string) => openKeyOn(env, page, key);

test("scan by pattern and by type; live key count", async () => {
  await page.goto(`${env.url}#/kv/default`);
  await keyRows().nth(7).waitFor();
  await page.locator("nav.side a", { hasText: "default" }).getByText("8").waitFor();
  await env.shot(page, "kv-keys");
  await page.fill("input[name=pattern]", "user:*");
  await button("Scan").click();
  await eventually(async () =>
    expect(await keyRows().allTextContents()).toEqual([
      expect.stringMatching(/^user:1hash\d+ B∞$/),
    ]),
  );
  await page.fill("input[name=pattern]", "*");
  await page.selectOption("select[name=Type]", "zset");
  await button("Scan").click();
  await eventually(async () =>
    expect(await keyRows().allTextContents()).toEqual([
      expect.stringMatching(/^scoreszset\d+ B∞$/),
    ]),
  );
});

test("string: view, edit, save (TTL kept)", async () => {
  await openKey("temp");
  await panel().locator("textarea[name=value]").fill("changed");
  await panel().getByRole("button", { name: "Save" }).click();
  await eventually(async () => expect(await redis("GET", "temp")).toBe("changed"));
  expect(await redis("TTL", "temp")).toBeGreaterThan(900);
  await env.shot(page, "kv-string");
});

test("hash: edit a field, add one, remove one", async () => {
  await openKey("user:1");
  await panel().locator("input[aria-label='value of name']").fill("anna");
  await panel().locator("tr", { hasText: "name" }).getByRole("button", { name: "Save" }).click();
  await eventually(async () => expect(await redis("HGET", "user:1", "name")).toBe("anna"));
  await panel().locator("input[name=add-field]").fill("city");
  await panel().locator("input[name=add-value]").fill("Oslo");
  await panel().getByRole("button", { name: "Add" }).click();
  await panel().getByText("city").waitFor();
  await panel().locator("tr", { hasText: "role" }).getByRole("button", { name: "Remove" }).click();
  await eventually(async () =>
    expect(await redis("HGETALL", "user:1")).toEqual(["name", "anna", "city", "Oslo"]),
  );
  await env.shot(page, "kv-hash");
});

test("list: set an element, push, remove", async () => {
  await openKey("jobs");
  await panel().locator("input[aria-label='value of 1']").fill("B");
  await panel().locator("tbody tr").nth(1).getByRole("button", { name: "Save" }).click();
  await eventually(async () =>
    expect(await redis("LRANGE", "jobs", "0", "-1")).toEqual(["a", "B", "c"]),
  );
  await panel().locator("input[name=add-value]").fill("d");
  await panel().getByRole("button", { name: "Add" }).click();
  await eventually(async () => expect(await redis("LLEN", "jobs")).toBe(4));
  await panel().locator("tbody tr").first().getByRole("button", { name: "Remove" }).click();
  await eventually(async () =>
    expect(await redis("LRANGE", "jobs", "0", "-1")).toEqual(["B", "c", "d"]),
  );
});

test("set: add and remove members", async () => {
  await openKey("tags");
  await panel().locator("input[name=add-field]").fill("blue");
  await panel().getByRole("button", { name: "Add" }).click();
  await panel().getByText("blue").waitFor();
  await panel().locator("tr", { hasText: "red" }).getByRole("button", { name: "Remove" }).click();
  await eventually(async () =>
    expect(((await redis("SMEMBERS", "tags")) as string[]).sort()).toEqual(["blue", "green"]),
  );
});

test("sorted set: change a score, add, remove", async () => {
  await openKey("scores");
  await panel().locator("input[aria-label='value of ann']").fill("10");
  await panel().locator("tr", { hasText: "ann" }).getByRole("button", { name: "Save" }).click();
  await eventually(async () => expect(await redis("ZSCORE", "scores", "ann")).toBe("10"));
  await panel().locator("input[name=add-field]").fill("cy");
  await panel().locator("input[name=add-value]").fill("5");
  await panel().getByRole("button", { name: "Add" }).click();
  await eventually(async () =>
    expect(await redis("ZRANGE", "scores", "0", "-1")).toEqual(["bob", "cy", "ann"]),
  );
  await panel().locator("tr", { hasText: "bob" }).getByRole("button", { name: "Remove" }).click();
  await eventually(async () => expect(await redis("ZCARD", "scores")).toBe(2));
  await env.shot(page, "kv-zset");
});

test("stream: add an entry, delete one", async () => {
  await openKey("events");
  await panel().locator("input[name=add-field]").fill("kind");
  await panel().locator("input[name=add-value]").fill("login");
  await panel().getByRole("button", { name: "Add" }).click();
  await panel().getByText("kind=login").waitFor();
  await panel()
    .locator("tr", { hasText: "kind=signup" })
    .getByRole("button", { name: "Remove" })
    .click();
  await eventually(async () => expect(await redis("XLEN", "events")).toBe(1));
});

test("JSON document stored by JSON.SET: edit as text", async () => {
  await openKey("doc");
  await panel().locator("textarea[name=value]").fill('{"a":2,"b":[true]}');
  await panel().getByRole("button", { name: "Save" }).click();
  await eventually(async () => expect(await redis("JSON.GET", "doc", "$.b")).toBe("[[true]]"));
});

test("TTL: set and persist; delete a key", async () => {
  await openKey("greeting");
  await panel().locator("input[name=ttl]").fill("500");
  await button("Set TTL").click();
  await panel().locator("[data-ttl]", { hasText: "8m" }).waitFor();
  expect(await redis("TTL", "greeting")).toBeGreaterThan(400);
  await button("Persist").click();
  await panel().locator("[data-ttl]", { hasText: "∞" }).waitFor();
  expect(await redis("TTL", "greeting")).toBe(-1);
  await button("Delete key").click();
  await panel().waitFor({ state: "detached" });
  expect(await redis("EXISTS", "greeting")).toBe(0);
});

test("new key form creates a key of the chosen type", async () => {
  await page.goto(`${env.url}#/kv/default`);
  await button("New key").click();
  await page.selectOption("select[name='New key type']", "hash");
  await page.fill("input[name=new-key]", "created");
  await page.fill("input[name=new-field]", "f");
  await page.fill("input[name=new-value]", "v");
  await button("Create").click();
  await panel().locator("h2", { hasText: "created" }).waitFor();
  expect(await redis("HGETALL", "created")).toEqual(["f", "v"]);
});

test("command box: read-only token by default, standard token when chosen", async () => {
  await page.goto(`${env.url}#/kv/default`);
  const box = page.locator("section[aria-label='Command box']");
  await box.locator("input[name=command]").fill('SET boxed "two words"');
  await box.getByRole("button", { name: "Run" }).click();
  await box.locator(".entry.failed", { hasText: "NOPERM" }).waitFor();
  expect(await redis("EXISTS", "boxed")).toBe(0);
  await box.locator("select[name=token]").selectOption("standard");
  await box.locator("input[name=command]").fill('SET boxed "two words"');
  await box.getByRole("button", { name: "Run" }).click();
  await box.locator(".entry:not(.failed)", { hasText: "OK" }).waitFor();
  await box.locator("select[name=token]").selectOption("readonly");
  await box.locator("input[name=command]").fill("GET boxed");
  await box.getByRole("button", { name: "Run" }).click();
  await box.locator(".entry pre", { hasText: "two words" }).waitFor();
  await env.shot(page, "kv-command");
});

test("a database created or deleted with `stashd db` shows in the side bar without a reload", async () => {
  await page.goto(`${env.url}#/kv/default`);
  const sideLink = (name: string) => page.locator("nav.side a", { hasText: name });
  await sideLink("default").waitFor();
  createDatabase(env.q.stashd.dataDir, "added-live");
  // The summary refreshes every 3 s; its database list follows the registry.
  await sideLink("added-live").waitFor({ timeout: 15_000 });
  await sideLink("added-live").click();
  await page.waitForURL(/#\/kv\/added-live/);
  deleteDatabase(env.q.stashd.dataDir, "added-live");
  await sideLink("added-live").waitFor({ state: "detached", timeout: 15_000 });
  expect(await sideLink("default").count()).toBe(1);
});
