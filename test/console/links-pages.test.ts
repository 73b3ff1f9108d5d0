import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import type { TestReceiver } from "../queue/receiver.js";
import { consoleEnv, type ConsoleEnv } from "./harness.js";
import { redisOn } from "./kv-helpers.js";

/**
 * Every object has a URL (console/src/routes.ts, docs/console.md "Links"): a pasted link opens the
 * object, filters live in the query, back and forward move between them, rows open with Enter.
 */
let env: ConsoleEnv;
let page: Page;
let rx: TestReceiver;
let dlqId: string;
let failedMessageId: string;

beforeAll(async () => {
  env = await consoleEnv();
  rx = await env.q.receiver();
  rx.status = 500;
  rx.responseBody = "no thanks";
  const failed = await env.q.client.publishJSON({ url: `${rx.url}/fail`, body: {}, retries: 0 });
  failedMessageId = failed.messageId;
  await eventually(async () => {
    const r = (await (await env.q.api("/v2/dlq")).json()) as { messages: { dlqId: string }[] };
    expect(r.messages).toHaveLength(1);
    dlqId = r.messages[0]?.dlqId ?? "";
  });
  rx.status = 200;
  page = await env.newPage();
  await env.login(page);
});
afterAll(() => env?.close());

const panel = () => page.locator("aside.panel");
const hash = () => page.evaluate<string>("location.hash");

test("a pasted DLQ link opens the entry; a row click sets the URL; back and forward move", async () => {
  await page.goto(`${env.url}#/dlq/${encodeURIComponent(dlqId)}`);
  await panel().getByText("no thanks").first().waitFor();
  await panel().getByText(failedMessageId).waitFor();
  await panel().getByRole("button", { name: "Close" }).click();
  await panel().waitFor({ state: "detached" });
  expect(await hash()).toBe("#/dlq");
  await page.locator("table[aria-label=dlq] tbody tr td").nth(1).click();
  await panel().getByText("no thanks").first().waitFor();
  expect(await hash()).toBe(`#/dlq/${encodeURIComponent(dlqId)}`);
  await page.goBack();
  await panel().waitFor({ state: "detached" });
  await page.goForward();
  await panel().getByText("no thanks").first().waitFor();
});

test("list filters are query parameters: #/logs?state=FAILED shows only failed events", async () => {
  await page.goto(`${env.url}#/logs?state=FAILED`);
  await expect(page.locator("select[name=State]").inputValue()).resolves.toBe("FAILED");
  const rows = page.locator("table[aria-label=events] tbody tr");
  await rows.first().getByText("FAILED").waitFor();
  for (const text of await rows.allTextContents()) expect(text).toContain("FAILED");
  await page.selectOption("select[name=State]", "CREATED");
  await page.getByRole("button", { name: "Search", exact: true }).click();
  await eventually(async () => expect(await hash()).toBe("#/logs?state=CREATED"));
  await page.goBack();
  await eventually(async () =>
    expect(await page.locator("select[name=State]").inputValue()).toBe("FAILED"),
  );
});

test("message, schedule, queue and KV key links open their object", async () => {
  // A message's link opens its own page (console/src/pages/message-page.tsx).
  await page.goto(`${env.url}#/messages/${failedMessageId}`);
  await page.getByRole("heading", { name: `Message ${failedMessageId}` }).waitFor();
  await page.locator("section h3", { hasText: "Body" }).first().waitFor();

  await env.q.client.schedules.create({
    destination: `${rx.url}/tick`,
    cron: "0 0 1 1 *",
    scheduleId: "nightly.report",
  });
  await page.goto(`${env.url}#/schedules/nightly.report`);
  await panel().getByText("0 0 1 1 *").waitFor();

  await env.q.client.queue({ queueName: "orders" }).upsert({ parallelism: 2 });
  await page.goto(`${env.url}#/queues/orders`);
  await panel().getByText("Parallelism").waitFor();
  await expect(
    panel().getByRole("link", { name: "Its messages" }).getAttribute("href"),
  ).resolves.toBe("#/messages?queueName=orders");

  const key = "odd/key: ä ü #1?";
  await redisOn(env, "SET", key, "value");
  await page.goto(`${env.url}#/kv/default/key/${encodeURIComponent(key)}`);
  await panel().locator("h2", { hasText: key }).waitFor();
  await expect(panel().locator("textarea").inputValue()).resolves.toBe("value");
  await env.shot(page, "links-kv-key");
});

test("keyboard: Tab reaches a row, Enter opens it", async () => {
  await page.goto(`${env.url}#/dlq`);
  const row = page.locator("table[aria-label=dlq] tbody tr").first();
  await row.waitFor();
  await row.focus();
  await page.keyboard.press("Enter");
  await panel().getByText("no thanks").first().waitFor();
  expect(await hash()).toBe(`#/dlq/${encodeURIComponent(dlqId)}`);
});
