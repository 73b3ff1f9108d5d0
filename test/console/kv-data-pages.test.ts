import path from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { FULL_AT } from "../../console/src/data-level.js";
import { credentialsOf } from "../../src/kv/databases/database-manager.js";
import { createDatabase } from "../../src/kv/databases/registry.js";
import { consoleCookie, consoleEnv, type ConsoleEnv } from "./harness.js";
import { fillUntilFull } from "./kv-helpers.js";

/**
 * The KV page's data size in chromium: a managed database with an 8 MiB max data size shows
 * "Data … of 8.0 MiB" with its bar, and once filled until writes are refused, the red state
 * with what to do, and a red mark beside the database in the side bar. The full page is the
 * screenshot of docs/console.md (docs/img/console-kv-memory.png).
 */
const MIB = 1024 * 1024;
let env: ConsoleEnv;
let page: Page;

beforeAll(async () => {
  env = await consoleEnv({ start: { kvMaxDataBytes: 8 * MIB } });
  // A few keys of the application beside the cache that will fill the database.
  const seed = [
    ["SET", "config:theme", "dark"],
    ["HSET", "user:1", "name", "ann"],
    ["ZADD", "leaderboard", "7", "ann"],
  ];
  await env.q.stashd.kvFetch("/pipeline", { body: JSON.stringify(seed) });
  page = await env.newPage();
  await page.setViewportSize({ width: 1280, height: 800 });
  await env.login(page);
});
afterAll(() => env?.close());

const meter = () => page.locator(".data-meter");
const sideMark = () => page.locator("nav.side a", { hasText: "default" }).locator(".data-mark");

test("the data size under its limit: size of the limit, a bar, no warning", async () => {
  await page.goto(`${env.url}#/kv/default`);
  await meter()
    .locator(".data-text", { hasText: /^Data [\d.]+ (KiB|MiB) of 8\.0 MiB$/ })
    .waitFor();
  expect(await meter().getAttribute("data-level")).toBe("ok");
  expect(await meter().getByRole("meter", { name: "data size" }).count()).toBe(1);
  expect(await meter().locator(".data-why").count()).toBe(0);
  expect(await sideMark().count()).toBe(0);
  await env.shot(page, "kv-memory-normal");
});

test("filled until writes are refused: red, at its limit, what to do, and a mark in the side bar", async () => {
  const cookie = await consoleCookie(env);
  const used = async () => {
    const res = await fetch(`${env.url}/api/summary`, { headers: { cookie } });
    const s = (await res.json()) as { databases: { name: string; data: { used: number } }[] };
    return s.databases.find((d) => d.name === "default")?.data.used ?? 0;
  };
  await fillUntilFull(env, async () => (await used()) >= FULL_AT * 8 * MIB);
  // The summary (every 3 s) brings the new size to the open page without a reload.
  await meter().and(page.locator("[data-level=full]")).waitFor({ timeout: 15_000 });
  await sideMark().and(page.locator("[data-level=full]")).waitFor();
  // Loaded afresh (the key list is read once), it still shows full.
  await page.reload();
  await page
    .locator("table[aria-label=keys] tbody tr", { hasText: "cache:item:" })
    .first()
    .waitFor();
  await meter().and(page.locator("[data-level=full]")).waitFor({ timeout: 15_000 });
  expect(await meter().locator(".data-pct").textContent()).toMatch(/^(98|99|10\d) %$/);
  expect(await meter().getByRole("alert").textContent()).toBe(
    "At its limit: writes are refused: delete keys or set TTLs, or raise the limit: STASHD_KV_MAX_DATA_BYTES / --max-data-size.",
  );
  expect(await sideMark().getAttribute("data-level")).toBe("full");
  await env.shot(page, "kv-memory-full");
  await page.screenshot({ path: path.resolve("docs", "img", "console-kv-memory.png") });
});

test("a cache created with --eviction, filled past its size: a neutral bar that says it evicts, no warning, no mark", async () => {
  const record = createDatabase(env.q.stashd.dataDir, "cache", {
    maxDataBytes: 4 * MIB,
    eviction: true,
  });
  const token = credentialsOf(record).token;
  const value = "e".repeat(256 * 1024);
  const write = (i: number) =>
    env.q.stashd.kvFetch("/", { body: JSON.stringify(["SET", `e:${i}`, value]), token });
  // The database starts on the next registry poll; 40 writes of 256 KiB fill 4 MiB twice over.
  await expect.poll(async () => (await write(0)).status, { timeout: 15_000 }).toBe(200);
  for (let i = 1; i < 40; i++) expect((await write(i)).status).toBe(200);
  await page.goto(`${env.url}#/kv/cache`);
  const cacheMark = page.locator("nav.side a", { hasText: "cache" }).locator(".data-mark");
  await meter().and(page.locator("[data-level=evicts]")).waitFor({ timeout: 15_000 });
  expect(await meter().locator(".data-why").textContent()).toMatch(
    /^A cache: at its limit Redis evicts/,
  );
  expect(await meter().getByRole("alert").count()).toBe(0);
  expect(await cacheMark.count()).toBe(0);
  await env.shot(page, "kv-memory-evicts");
});
