import path from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import { loggedIn, type ConsoleEnv } from "./harness.js";

/**
 * The status bar's refresh choice in chromium: the live counts (and every list that refreshes
 * itself) follow it, "paused" makes no request until resumed, and the choice survives a reload.
 * Before, every live part refreshed on constants (3 s for the counts) with no way to stop them.
 * "Refresh now" beside it loads the counts and the page shown again at once, paused or not.
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

test("Refresh now loads the counts and the page again at once, also while paused, beside the one refresh choice", async () => {
  const rx = await env.q.receiver();
  rx.status = 500;
  rx.responseBody = "down for maintenance";
  await page.goto(`${env.url}#/dlq`);
  await choice().selectOption("0");
  await page.locator("[data-connection=live]", { hasText: "live, paused" }).waitFor();
  await page.getByText("The DLQ is empty.").waitFor();
  const dlqCount = page.locator(".stat [data-stat=DLQ]");
  expect(await dlqCount.textContent()).toBe("0");
  // One refresh control in the top bar: the choice, and the button beside it.
  const bar = page.locator(".status");
  expect(await bar.locator("select").count()).toBe(1);
  expect(await bar.getByRole("button").allTextContents()).toEqual(["Refresh now"]);

  await env.q.client.publishJSON({ url: `${rx.url}/down`, body: {}, retries: 0 });
  await eventually(async () => {
    const r = (await (await env.q.api("/v2/dlq")).json()) as { messages: unknown[] };
    expect(r.messages).toHaveLength(1);
  });
  // Paused: what the page shows stays as loaded.
  expect(await summariesOver(500)).toBe(0);
  expect(await dlqCount.textContent()).toBe("0");
  expect(await page.getByText("The DLQ is empty.").isVisible()).toBe(true);

  await bar.getByRole("button", { name: "Refresh now" }).click();
  await page.locator(".stat [data-stat=DLQ]", { hasText: /^1$/ }).waitFor();
  await page.locator("table[aria-label=dlq] tbody tr", { hasText: "/down" }).waitFor();
  await env.shot(page, "refresh-now");
  // Still paused: one load, not a restart of the timers.
  expect(await choice().inputValue()).toBe("0");
  expect(await summariesOver(1_000)).toBe(0);
  await choice().selectOption("3000");
});
