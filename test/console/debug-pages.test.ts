import type { Locator, Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import type { TestReceiver } from "../queue/receiver.js";
import { consoleEnv, recordDialogs, type ConsoleEnv } from "./harness.js";
import { startDestination, type Destination } from "./queue-seed.js";

/**
 * Debugging a failed delivery in chromium against a real stashd: a dead message's attempts on
 * its DLQ entry and its page, retried or deleted from either with the outcome kept on the page;
 * the flow-control page's figures each saying what they count; long ids cut with a Copy button;
 * filters folded on a phone.
 */
let env: ConsoleEnv;
let page: Page;
let rx: TestReceiver;
let slow: Destination;
const dialogs = recordDialogs();

beforeAll(async () => {
  env = await consoleEnv();
  rx = await env.q.receiver();
  slow = await startDestination();
  page = await env.newPage(dialogs);
  await env.login(page);
});
afterAll(async () => {
  await slow?.close();
  await env?.close();
});

/** How far the page's content reaches past the window's width (0 = nothing cut or scrolled). */
const overflow = () =>
  page.evaluate<number>(
    "Math.max(document.documentElement.scrollWidth, document.body.scrollWidth) - window.innerWidth",
  );

interface DlqEntry {
  dlqId: string;
  messageId: string;
}

const dlq = async (): Promise<DlqEntry[]> =>
  ((await (await env.q.api("/v2/dlq")).json()) as { messages: DlqEntry[] }).messages;

/** Publishes a message that fails `retries + 1` times and waits for its DLQ entry. */
async function deadMessage(body: string, retries: number): Promise<DlqEntry> {
  rx.status = 500;
  rx.responseBody = body;
  const { messageId } = await env.q.client.publishJSON({
    url: `${rx.url}/fail`,
    body: { body },
    retries,
    retryDelay: "10",
  });
  const entry = await eventually(
    async () => {
      const found = (await dlq()).find((e) => e.messageId === messageId);
      expect(found).toBeDefined();
      return found as DlqEntry;
    },
    { timeoutMs: 15_000 },
  );
  rx.status = 200;
  return entry;
}

const TIME = /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/;

test("a DLQ entry lists every attempt (time, status, response excerpt); Retry publishes it again and says as which message", async () => {
  const dead = await deadMessage("quota exceeded for tenant 42", 2);
  await page.goto(`${env.url}#/dlq/${encodeURIComponent(dead.dlqId)}`);
  const panel = page.locator("aside.panel");
  const history = panel.locator("section[aria-label='attempt history']");
  await history.getByRole("heading", { name: "Attempts (3), oldest first" }).waitFor();
  const attempts = history.locator("ol[aria-label=attempts] > li");
  expect(await attempts.count()).toBe(3);
  for (const i of [0, 1, 2]) {
    const a = attempts.nth(i);
    await a.getByText(`Attempt ${i + 1}`, { exact: true }).waitFor();
    expect(await a.locator(".attempt-status").textContent()).toBe("HTTP 500");
    expect(await a.locator("[data-excerpt]").textContent()).toBe("quota exceeded for tenant 42");
    expect(await a.locator(".attempt-head").textContent()).toMatch(TIME);
  }
  await env.shot(page, "dlq-attempts");

  const before = rx.requests.length;
  await panel.getByRole("button", { name: "Retry", exact: true }).click();
  const outcome = page.locator("[data-outcome=retried]");
  await outcome.waitFor();
  const newId = (await outcome.getByRole("link").textContent()) ?? "";
  expect(newId).not.toBe(dead.messageId);
  expect(await outcome.textContent()).toBe(
    `Retried DLQ entry ${dead.dlqId}: published again as message ${newId}; the entry left the DLQ.`,
  );
  await env.shot(page, "dlq-retried");
  expect((await dlq()).map((e) => e.dlqId)).not.toContain(dead.dlqId);
  await eventually(() => expect(rx.requests.length).toBe(before + 1));
  // The outcome's link opens the new message, delivered this time.
  await outcome.getByRole("link").click();
  await page.waitForURL(new RegExp(`#/messages/${newId}$`));
  await page.getByText("Delivered: nothing more will happen.").waitFor();
});

test("a failed message's page offers Retry and Delete for its DLQ entry; Delete asks first and says what it did", async () => {
  const dead = await deadMessage("<html>upstream timeout</html>", 0);
  await page.goto(`${env.url}#/messages/${dead.messageId}`);
  const next = page.locator("section[aria-label='What comes next']");
  await next.getByRole("link", { name: `DLQ entry ${dead.dlqId}` }).waitFor();
  const attempts = page.locator("ol[aria-label=attempts] > li");
  await attempts.locator("[data-excerpt]", { hasText: "<html>upstream timeout</html>" }).waitFor();
  await env.shot(page, "message-failed");

  dialogs.answer = false;
  await next.getByRole("button", { name: "Delete", exact: true }).click();
  expect(dialogs.asked.at(-1)).toBe(
    `Delete DLQ entry ${dead.dlqId}? The failed message cannot be retried after this.`,
  );
  expect((await dlq()).map((e) => e.dlqId)).toContain(dead.dlqId);
  dialogs.answer = true;
  await next.getByRole("button", { name: "Delete", exact: true }).click();
  await next
    .locator("[data-outcome=deleted]", { hasText: `Deleted DLQ entry ${dead.dlqId}.` })
    .waitFor();
  expect((await dlq()).map((e) => e.dlqId)).not.toContain(dead.dlqId);
  // The entry is gone: no Retry or Delete left to press.
  await next.getByRole("button", { name: "Retry", exact: true }).waitFor({ state: "detached" });
});

/**
 * Whether an id's text is cut (it breaks anywhere and shows one line, so the rest is below the
 * box), and on how many lines it is shown.
 */
const shape = (el: Locator) =>
  el.evaluate((e) => ({
    cut: e.scrollHeight > e.clientHeight + 1,
    lines: Math.round(
      e.getBoundingClientRect().height /
        parseFloat(e.ownerDocument.defaultView?.getComputedStyle(e).lineHeight ?? "1"),
    ),
  }));

/** A key longer than any column has room for. */
const LONG_KEY = `tenant-${"0123456789abcdef".repeat(6)}-exports`;

test("flow control: every figure says what it counts; a long key is cut on one line and copied whole", async () => {
  // Parallelism 1 and a destination that never answers: one delivery in flight, two waiting.
  for (const n of [1, 2, 3]) {
    await env.q.client.publishJSON({
      url: `${slow.url}/slow`,
      body: { n },
      flowControl: { key: LONG_KEY, parallelism: 1, rate: 10, period: 60 },
    });
  }
  await eventually(
    async () => {
      const res = await env.q.api(`/v2/flowControl/${LONG_KEY}`);
      expect(await res.json()).toMatchObject({
        parallelismCount: 1,
        waitListSize: 2,
        rateCount: 1,
      });
    },
    { timeoutMs: 10_000 },
  );
  await page.goto(`${env.url}#/flow-control`);
  const table = page.locator("table[aria-label='flow control keys']");
  const row = table.locator("tbody tr", { has: page.locator(`[data-id='${LONG_KEY}']`) });
  await row.waitFor();
  const heads = await table.locator("thead th").allTextContents();
  expect(heads.slice(0, 4)).toEqual([
    "Key",
    "Waiting messages",
    "Parallelism (in use / limit)",
    "Rate (started / limit per period)",
  ]);
  expect(await row.locator("[data-fig=waiting]").textContent()).toBe("2 waiting");
  expect(await row.locator("[data-fig=parallelism]").textContent()).toBe("1 in use / 1 limit");
  expect(await row.locator("[data-fig=rate]").textContent()).toBe("1 started / 10 limit per 60 s");
  // The key is on one line, cut with "…" (its whole text in the tooltip), the page not widened.
  const key = row.locator(".id-text");
  expect(await key.getAttribute("title")).toBe(LONG_KEY);
  const { cut, lines } = await shape(key);
  expect(cut).toBe(true);
  expect(lines).toBe(1);
  expect(await overflow()).toBe(0);
  await page.context().grantPermissions(["clipboard-read", "clipboard-write"]);
  await row.getByRole("button", { name: "Copy flow-control key" }).click();
  await page.locator(".toast", { hasText: "Copied flow-control key" }).first().waitFor();
  expect(await page.evaluate<string>("navigator.clipboard.readText()")).toBe(LONG_KEY);
  await env.shot(page, "flow-control");
});

test("390 px (a phone): filters fold behind one button, the list shows on the first screen, ids stay cut", async () => {
  await page.setViewportSize({ width: 390, height: 780 });
  try {
    await page.goto(`${env.url}#/messages`);
    const rows = page.locator("table[aria-label=messages] tbody tr");
    await rows.first().waitFor();
    const toggle = page.getByRole("button", { name: "Filters", exact: true });
    await toggle.waitFor();
    expect(await page.locator("input[name=Label]").isVisible()).toBe(false);
    // The first rows are on the first screen, not below a column of fields.
    expect((await rows.first().boundingBox())?.y).toBeLessThan(780);
    expect(await overflow()).toBe(0);
    await env.shot(page, "phone-messages-filters-folded");
    await toggle.click();
    const label = page.locator("input[name=Label]");
    await label.waitFor();
    // Two fields to a row.
    const [a, b] = await Promise.all(
      ["Message id", "State"].map((n) => page.locator(`[name='${n}']`).boundingBox()),
    );
    expect(Math.abs((a?.y ?? 0) - (b?.y ?? 100))).toBeLessThan(4);
    expect(await overflow()).toBe(0);
    await env.shot(page, "phone-messages-filters-open");
    await page.locator("input[name=URL]").fill(`${rx.url}/fail`);
    await page.locator("input[name=URL]").press("Enter");
    // Search folds the fields again, the button saying one is set, and the list is filtered.
    await page.getByRole("button", { name: "Filters (1 set)", exact: true }).waitFor();
    await eventually(async () => {
      const urls = await rows.locator("td:nth-child(2)").allTextContents();
      expect(urls.length).toBeGreaterThan(0);
      for (const u of urls) expect(u).toBe(`POST ${rx.url}/fail`);
    });
    expect(await label.isVisible()).toBe(false);
    // A message id is one line, cut, with its Copy button beside it.
    const id = rows.first().locator(".id");
    await id.getByRole("button", { name: "Copy message id" }).waitFor();
    expect(await shape(id.locator(".id-text"))).toEqual({ cut: true, lines: 1 });
    await env.shot(page, "phone-messages-filtered");

    await page.goto(`${env.url}#/flow-control`);
    await page.locator("[data-fig=waiting]").first().waitFor();
    expect(await overflow()).toBe(0);
    // Each key a card: every figure on screen with its column's title, none scrolled out of view.
    for (const fig of ["waiting", "parallelism", "rate"]) {
      const box = await page.locator(`[data-fig=${fig}]`).first().boundingBox();
      expect((box?.x ?? 999) + (box?.width ?? 0), fig).toBeLessThanOrEqual(390);
    }
    const caption = await page
      .locator("td", { has: page.locator("[data-fig=rate]") })
      .first()
      .evaluate((td) => td.ownerDocument.defaultView?.getComputedStyle(td, "::before").content);
    expect(caption).toBe('"Rate (started / limit per period)"');
    await env.shot(page, "phone-flow-control");

    // A DLQ entry on a phone: its attempts (a long answer cut to an excerpt) fit the width.
    const dead = await deadMessage(`upstream said: ${"very ".repeat(80)}long`, 1);
    await page.goto(`${env.url}#/dlq/${encodeURIComponent(dead.dlqId)}`);
    const excerpts = page.locator("section[aria-label='attempt history'] [data-excerpt]");
    await excerpts.nth(1).waitFor();
    expect((await excerpts.first().textContent())?.length).toBe(201);
    expect(await overflow()).toBe(0);
    // The message id in the entry's facts is cut, its copy button on screen beside it.
    const factId = page.locator("aside.panel .facts .id");
    expect(await shape(factId.locator(".id-text"))).toEqual({ cut: true, lines: 1 });
    const copy = await factId.getByRole("button", { name: "Copy message id" }).boundingBox();
    expect((copy?.x ?? 999) + (copy?.width ?? 0)).toBeLessThanOrEqual(390);
    await env.shot(page, "phone-dlq-entry");
  } finally {
    await page.setViewportSize({ width: 1440, height: 900 });
  }
});
