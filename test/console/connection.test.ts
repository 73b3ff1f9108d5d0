import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { consoleEnv, type ConsoleEnv } from "./harness.js";

/**
 * Issue 26's "the console lies" bugs in chromium against a real stashd: the connection indicator
 * when the queue's Redis or stashd itself stops (and comes back), list errors shown as errors and
 * never above old rows or as an empty list, and every filter the Logs page offers accepted by the
 * API.
 */
let env: ConsoleEnv;
let page: Page;
/** The queue's Redis once restarted by a test (stopped at the end). */
let restarted: TestRedis | undefined;

beforeAll(async () => {
  env = await consoleEnv();
  page = await env.newPage();
  await env.login(page);
});
afterAll(async () => {
  await env?.close();
  await restarted?.stop();
});

const button = (name: string) => page.getByRole("button", { name, exact: true });
const indicator = () => page.locator("[data-connection]");
const listError = (label: string) => page.locator(`[data-list-error='${label}']`);
/** Offline must show within a few seconds: one poll (3 s) plus the summary's timeout. */
const FEW_SECONDS = { timeoutMs: 8_000, intervalMs: 100 };
/** Waits for the indicator to say `state`. */
const connection = (state: "live" | "offline", within = FEW_SECONDS) =>
  eventually(
    async () => expect(await indicator().getAttribute("data-connection")).toBe(state),
    within,
  );

test("Logs: every filter it offers is accepted by the API", async () => {
  await env.q.client.publishJSON({ url: "http://127.0.0.1:9/x", body: {}, delay: 3600 });
  await page.goto(`${env.url}#/logs`);
  await page.locator("table[aria-label=events] tbody tr").first().waitFor();
  const fields = page.locator("form.filters input[type=text]");
  const names: string[] = [];
  for (let i = 0; i < (await fields.count()); i++) {
    names.push((await fields.nth(i).getAttribute("name")) ?? "");
  }
  expect(names.length).toBeGreaterThan(5);
  expect(names).not.toContain("Response status");
  for (const name of names) {
    await page.fill(`form.filters input[name='${name}']`, "no-such-value");
    await button("Search").click();
    await page.getByText("No matching events.").waitFor();
    expect(await page.locator(".error-line").count()).toBe(0);
    await button("Clear").click();
    await page.locator("table[aria-label=events] tbody tr").first().waitFor();
  }
  await page.selectOption("form.filters select[name=State]", "DELIVERED");
  await button("Search").click();
  await page.getByText("No matching events.").waitFor();
  expect(await page.locator(".error-line").count()).toBe(0);
  await button("Clear").click();
});

test("the queue's Redis stops: offline within seconds, lists show the error, no old rows", async () => {
  await page.goto(`${env.url}#/logs`);
  await page.locator("table[aria-label=events] tbody tr").first().waitFor();
  await connection("live");
  const port = env.q.redis.port;
  await env.q.redis.stop();
  await connection("offline");
  await indicator().getByText("queue").waitFor();
  await expect(page.locator(".stat [data-stat=pending]").textContent()).resolves.toBe("—");
  // The live Logs list fails on its next refresh: the error replaces the rows.
  await listError("events").waitFor({ timeout: 40_000 });
  expect(await page.locator("table[aria-label=events]").count()).toBe(0);
  await env.shot(page, "offline-logs");
  await page.goto(`${env.url}#/dlq`);
  await listError("dlq").waitFor({ timeout: 40_000 });
  expect(await page.getByText("The DLQ is empty.").count()).toBe(0);
  await env.shot(page, "offline-dlq");

  restarted = await startRedis([], port);
  await connection("live", { timeoutMs: 20_000, intervalMs: 100 });
  // Back online, the page loads its list again by itself.
  await page.getByText("The DLQ is empty.").waitFor({ timeout: 20_000 });
  await env.shot(page, "back-online");
});

test("stashd stops: offline within seconds, the counts are no longer shown", async () => {
  await page.goto(`${env.url}#/messages`);
  await connection("live");
  await env.q.stashd.stopKeepingData();
  await connection("offline");
  await indicator().getByText("stashd is unreachable").waitFor();
  await expect(page.locator(".stat [data-stat=pending]").textContent()).resolves.toBe("—");
  await env.shot(page, "offline-stashd");
});
