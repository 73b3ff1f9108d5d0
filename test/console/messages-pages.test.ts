import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { EVENT_FILTERS, FILTER_LABELS } from "../../src/shared/message-filters.js";
import type { ConsoleEnv } from "./harness.js";
import { renderMs, seededConsole, type Seeded, type SeededConsole } from "./queue-seed.js";
import { recordRender } from "./render-times.js";

/** Polls wait as long as the harness's other waits: a loaded CI machine is slow to render. */
const POLL = { timeout: 10_000 };

/** The message-centric views (docs/console.md, Messages) on a seeded queue, in chromium. */
let env: ConsoleEnv;
let page: Page;
let seed: Seeded;
let seeded: SeededConsole | undefined;

beforeAll(async () => {
  seeded = await seededConsole(1000);
  ({ env, page, seed } = seeded);
}, 120_000);
afterAll(() => seeded?.close());

const rowOf = (id: string) => page.locator("table[aria-label=messages] tbody tr", { hasText: id });

test("the list has one row per message with its state now, attempts, last status and next attempt", async () => {
  const ms = await renderMs(page, "#/messages", rowOf(seed.delayed));
  recordRender("messages", ms);
  await expect(rowOf(seed.retrying).textContent()).resolves.toMatch(/RETRY.*1.*503.*in 10m/);
  await expect(rowOf(seed.delayed).textContent()).resolves.toMatch(/CREATED.*0.*in 60m.*later/);
  const failed = rowOf(seed.failed);
  await expect(failed.textContent()).resolves.toMatch(/FAILED.*1.*500.*in DLQ/);
  // One row per message, not per event: the retrying message has 4 events but 1 row.
  await expect(rowOf(seed.retrying).count()).resolves.toBe(1);
  await env.shot(page, "messages-list");
});

test("filters: state now and label narrow the rows", async () => {
  await page.goto(`${env.url}#/messages`);
  await page.selectOption("select[name=State]", "RETRY");
  await page.getByRole("button", { name: "Search", exact: true }).click();
  await rowOf(seed.retrying).waitFor();
  await expect
    .poll(() => page.locator("table[aria-label=messages] tbody tr").count(), POLL)
    .toBe(1);
  await page.selectOption("select[name=State]", "");
  await page.fill("input[name=Label]", "later");
  await page.keyboard.press("Enter");
  await rowOf(seed.delayed).waitFor();
  await expect
    .poll(() => page.locator("table[aria-label=messages] tbody tr").count(), POLL)
    .toBe(1);
});

test("a failed message's page: request, the attempt with its binary answer as hex, and its DLQ entry", async () => {
  const ms = await renderMs(
    page,
    `#/messages/${seed.failed}`,
    page.locator("ol[aria-label=attempts] li").first(),
  );
  recordRender("message page", ms);
  const attempt = page.locator("ol[aria-label=attempts] li").first();
  await expect(attempt.textContent()).resolves.toMatch(/HTTP 500.*FAILED/);
  await expect(attempt.textContent()).resolves.toMatch(/\d+ ms/);
  await attempt.locator("summary").click();
  await attempt.getByText("ff 00 fe 01 80").waitFor();
  await expect(attempt.textContent()).resolves.toContain("X-Reply: binary");
  // The request body comes from the DLQ entry, the only place a failed message's body is kept.
  await page.locator(".body-block", { hasText: "please fail" }).waitFor();
  await expect(page.textContent("main")).resolves.toContain("X-Seed: failed");
  await env.shot(page, "message-failed");
  await page.locator("a[data-dlq-link]").click();
  await page.waitForURL(/#\/dlq\/\d+-\d+$/);
});

test("a retrying message's page says when the next attempt is; a delivered one shows the UTF-8 answer", async () => {
  await page.goto(`${env.url}#/messages/${seed.retrying}`);
  const next = page.locator("[aria-label='What comes next']");
  await next.getByText(/Next attempt .* UTC.* \(in 10m\)/).waitFor();
  await page.locator(".body-block", { hasText: '{"try":"again"}' }).waitFor();
  await env.shot(page, "message-retrying");
  await page.goto(`${env.url}#/messages/${seed.delivered}`);
  await next.getByText("Delivered: nothing more will happen.").waitFor();
  const attempt = page.locator("ol[aria-label=attempts] li").first();
  await attempt.locator("summary").click();
  await attempt.locator("details pre", { hasText: "thanks: grüße" }).waitFor();
  await page.getByText("Not kept: the queue keeps a body while the message waits").waitFor();
});

test("an unknown message id is an error on its page", async () => {
  await page.goto(`${env.url}#/messages/msg_doesnotexist`);
  await page.locator(".error-line", { hasText: "no message msg_doesnotexist" }).waitFor();
});

test("logs: every filter the events API has, the response status included, works", async () => {
  await page.goto(`${env.url}#/logs`);
  await page.fill("input[name='Message id']", seed.failed);
  await page.keyboard.press("Enter");
  const table = page.locator("table[aria-label=events]");
  // The unfiltered list shows FAILED events too: wait for the filtered list itself.
  await expect.poll(() => table.locator("tbody tr").count(), POLL).toBe(4);
  await table.getByText("FAILED").waitFor();
  // Path, one of the filters the events API has beyond the SDKs' list.
  await page.getByRole("button", { name: "Clear", exact: true }).click();
  await page.fill("input[name=Path]", "/busy");
  await page.press("input[name=Path]", "Enter");
  await expect.poll(() => table.locator("tbody tr").count(), POLL).toBe(4);
  await expect(table.textContent()).resolves.not.toContain("/ok");
});

test("the Messages and Logs filter bars offer exactly the console API's filters", async () => {
  // The list both sides import (src/shared/message-filters.ts); message-filters.test.ts checks
  // the API takes each of them and refuses others.
  const expected = EVENT_FILTERS.map((k) => FILTER_LABELS[k]);
  for (const hash of ["#/messages", "#/logs"]) {
    await page.goto(`${env.url}${hash}`);
    await page.locator("form.filters [name]").first().waitFor();
    const fields = await page.locator("form.filters [name]").all();
    expect(await Promise.all(fields.map((f) => f.getAttribute("name"))), hash).toEqual(expected);
  }
});
