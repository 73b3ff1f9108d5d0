import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import { startApp, type App } from "../workflow/harness.js";
import { loggedIn, type ConsoleEnv } from "./harness.js";
import { renderMs, startDestination, type Destination } from "./queue-seed.js";
import { recordRender } from "./render-times.js";
import { fragileRoute, workflowClientOf } from "./workflow-helpers.js";

/**
 * Bulk actions (docs/console.md, Bulk actions): the count is shown before confirming, the work
 * goes in batches with progress, a DLQ retry can be undone; the Messages page's own filters
 * (message id, state) work for "Cancel all matching".
 */
let env: ConsoleEnv;
let page: Page;
let dest: Destination;
let app: App | undefined;

beforeAll(async () => {
  ({ env, page } = await loggedIn());
  dest = await startDestination();
}, 60_000);
afterAll(async () => {
  await app?.close();
  await dest?.close();
  await env?.close();
});

const api = async <T>(path: string): Promise<T> => (await env.q.api(path)).json() as Promise<T>;
const button = (name: string | RegExp) => page.getByRole("button", { name, exact: true });

async function dlqCount(query = ""): Promise<number> {
  let n = 0;
  let cursor = "";
  do {
    const r = await api<{ messages: unknown[]; cursor?: string }>(
      `/v2/dlq?count=100${query}${cursor ? `&cursor=${cursor}` : ""}`,
    );
    n += r.messages.length;
    cursor = r.cursor ?? "";
  } while (cursor);
  return n;
}

test("DLQ: retry all matching a filter shows the count first, goes in batches, and can be undone", async () => {
  // 150 failures to /bin (two batches of 100) and 3 to /busy (retries 0): the filter picks the 150.
  for (let i = 0; i < 150; i += 50) {
    await env.q.client.batch(
      Array.from({ length: 50 }, () => ({ url: `${dest.url}/bin`, body: "x", retries: 0 })),
    );
  }
  for (let i = 0; i < 3; i++) {
    await env.q.client.publish({ url: `${dest.url}/busy`, body: "y", retries: 0 });
  }
  await eventually(async () => expect(await dlqCount()).toBe(153), { timeoutMs: 30_000 });
  const ms = await renderMs(page, "#/dlq", page.locator("table[aria-label=dlq] tbody tr").first());
  recordRender("dlq", ms);
  await page.fill("input[name=URL]", `${dest.url}/bin`);
  await page.keyboard.press("Enter");
  await button("Retry all matching").click();
  await page.getByText("150 DLQ entries match").waitFor();
  await env.shot(page, "bulk-confirm");
  expect(await dlqCount()).toBe(153); // nothing done before the confirmation
  await button("Retry 150 DLQ entries").click();
  await page.locator("[data-bulk-progress]", { hasText: "150 of 150 (100%)" }).waitFor();
  await env.shot(page, "bulk-done");
  // The retried messages fail again into new DLQ entries; the 3 others stay.
  await eventually(async () => expect(await dlqCount(`&url=${dest.url}/busy`)).toBe(3));
  await page.getByRole("button", { name: /^Undo/ }).click();
  await page.getByText(/^Undone: \d+ of 150$/).waitFor();
}, 90_000);

test("DLQ: delete all matching asks with the count and deletes exactly those", async () => {
  await page.goto(`${env.url}#/dlq`);
  await page.fill("input[name=URL]", `${dest.url}/busy`);
  await page.keyboard.press("Enter");
  await button("Delete all matching").click();
  await page.getByText("3 DLQ entries match").waitFor();
  await button("Delete 3 DLQ entries").click();
  await page.locator("[data-bulk-progress]", { hasText: "3 of 3 (100%)" }).waitFor();
  expect(await dlqCount(`&url=${dest.url}/busy`)).toBe(0);
  expect(await dlqCount(`&url=${dest.url}/bin`)).toBeGreaterThan(0);
});

test("Messages: cancel all matching works with the page's message-id and state filters", async () => {
  const one = await env.q.client.publishJSON({ url: `${dest.url}/ok`, body: {}, delay: 3600 });
  const two = await env.q.client.publishJSON({ url: `${dest.url}/ok`, body: {}, delay: 3600 });
  await page.goto(`${env.url}#/messages`);
  await page.fill("input[name='Message id']", one.messageId);
  await page.keyboard.press("Enter");
  await button("Cancel all matching").click();
  await page.getByText("1 pending messages match").waitFor();
  await button("Cancel 1 pending messages").click();
  await page.locator("[data-bulk-progress]", { hasText: "1 of 1" }).waitFor();
  expect((await env.q.api(`/v2/messages/${one.messageId}`)).status).toBe(404);
  expect((await env.q.api(`/v2/messages/${two.messageId}`)).status).toBe(200);

  await page.fill("input[name='Message id']", "");
  await page.selectOption("select[name=State]", "CREATED");
  await page.keyboard.press("Enter");
  await button("Cancel all matching").click();
  await page.getByText("1 pending messages match").waitFor();
  await button("Cancel 1 pending messages").click();
  await page.locator("[data-bulk-progress]", { hasText: "1 of 1" }).waitFor();
  expect((await env.q.api(`/v2/messages/${two.messageId}`)).status).toBe(404);

  await page.selectOption("select[name=State]", "DELIVERED");
  await button("Search").click();
  await page.getByText("Finished messages cannot be cancelled").waitFor();
  await expect(button("Cancel all matching").isDisabled()).resolves.toBe(true);
});

test("workflow DLQ: restart all failed runs, with the count first", async () => {
  app = await startApp();
  const client = workflowClientOf(env);
  const state = { broken: true, done: 0 };
  const url = fragileRoute(env, app, "/fragile", state);
  for (let i = 0; i < 3; i++) await client.trigger({ url, retries: 0 });
  const failedRuns = async () =>
    ((await api<{ messages: unknown[] }>("/v2/workflows/dlq")).messages ?? []).length;
  await eventually(async () => expect(await failedRuns()).toBe(3));
  state.broken = false;
  await page.goto(`${env.url}#/workflows/dlq`);
  await button("Restart all").click();
  await page.getByText("3 failed runs match").waitFor();
  await button("Restart 3 failed runs").click();
  await page.locator("[data-bulk-progress]", { hasText: "3 of 3 (100%)" }).waitFor();
  await eventually(() => expect(state.done).toBe(3));
  expect(await failedRuns()).toBe(0);
});
