import path from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { loggedIn, type ConsoleEnv } from "./harness.js";

/**
 * The status bar's refresh choice in chromium: the live counts (and every list that refreshes
 * itself) follow it, "paused" makes no request until resumed, and the choice survives a reload.
 * Before, every live part refreshed on constants (3 s for the counts) with no way to stop them.
 */
let env: ConsoleEnv;
let page: Page;
let summaries = 0;

beforeAll(async () => {
  ({ env, page } = await loggedIn());
  page.on("request", (r) => {
    if (new URL(r.url()).pathname.endsWith("/api/summary")) summaries++;
  });
});
afterAll(() => env?.close());

const choice = () => page.getByRole("combobox", { name: "Refresh" });

/** Summary requests made over `ms` (asserting what does not happen needs the time to pass). */
async function summariesOver(ms: number): Promise<number> {
  const before = summaries;
  await page.waitForTimeout(ms);
  return summaries - before;
}

test("the counts refresh at the chosen pace, not at all while paused, and the choice survives a reload", async () => {
  await page.goto(`${env.url}#/messages`);
  expect(await choice().inputValue()).toBe("3000");

  await choice().selectOption("1000");
  await expect.poll(() => summaries, { timeout: 5_000 }).toBeGreaterThan(summaries + 1);
  expect(await summariesOver(2_600)).toBeGreaterThanOrEqual(2);

  await choice().selectOption("0");
  await page.locator("[data-connection=live]", { hasText: "live, paused" }).waitFor();
  expect(await summariesOver(2_600)).toBe(0);

  await page.reload();
  await page.waitForSelector("nav.side");
  expect(await choice().inputValue()).toBe("0");
  // The page's own load asks once; then nothing while paused.
  await page.waitForTimeout(300);
  expect(await summariesOver(2_600)).toBe(0);
  await page.screenshot({ path: path.resolve("test-artifacts", "console", "refresh-paused.png") });

  await choice().selectOption("3000");
  await page.locator("[data-connection=live]", { hasText: /^● live$/ }).waitFor();
  await expect.poll(() => summaries, { timeout: 8_000 }).toBeGreaterThan(summaries);
});
