import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import type { TestReceiver } from "../queue/receiver.js";
import { consoleEnv, type ConsoleEnv } from "./harness.js";
import { redisOn } from "./kv-helpers.js";

/**
 * The console is usable without a mouse and on any screen: layouts hold at 1280 px with a panel
 * open and at phone width (375 px), forms submit on Enter, input is trimmed and checked first.
 */
let env: ConsoleEnv;
let page: Page;
let rx: TestReceiver;

beforeAll(async () => {
  env = await consoleEnv();
  rx = await env.q.receiver();
  rx.status = 500;
  rx.responseBody = "a long response body ".repeat(40);
  await env.q.client.publishJSON({
    url: `${rx.url}/a/rather/long/path/that/could/push/the/layout/sideways/${"x".repeat(80)}`,
    body: { hello: "world" },
    retries: 0,
  });
  await eventually(async () => {
    const r = (await (await env.q.api("/v2/dlq")).json()) as { messages: unknown[] };
    expect(r.messages).toHaveLength(1);
  });
  await redisOn(env, "HSET", `user:${"long-name-".repeat(12)}`, "field", "value");
  page = await env.newPage();
});
afterAll(() => env?.close());

/** How far the page's content reaches past the window's width (0 = nothing cut or scrolled). */
const overflow = () =>
  page.evaluate<number>(
    "Math.max(document.documentElement.scrollWidth, document.body.scrollWidth) - window.innerWidth",
  );

test("a token pasted with spaces and a line break logs in", async () => {
  await page.goto(env.url);
  await page.fill("input[name=token]", `  ${env.q.stashd.queue.token}\n `);
  await page.click("button[type=submit]");
  await page.waitForSelector("nav.side");
});

test("1280 px with a side panel open: nothing overflows, the list keeps its columns", async () => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${env.url}#/dlq`);
  await page.locator("table[aria-label=dlq] tbody tr td").nth(1).click();
  await page.locator("aside.panel h3", { hasText: "Response body" }).waitFor();
  expect(await overflow()).toBe(0);
  const url = page.locator("table[aria-label=dlq] tbody tr td").nth(3);
  expect((await url.boundingBox())?.width).toBeGreaterThan(80);
  await env.shot(page, "layout-1280-dlq");
  await page.goto(`${env.url}#/kv/default`);
  await page.locator("table[aria-label=keys] tbody tr").first().click();
  await page.locator("aside.panel table.members").waitFor();
  expect(await overflow()).toBe(0);
  await env.shot(page, "layout-1280-kv");
});

test("375 px (a phone): pages stack and stay readable", async () => {
  await page.setViewportSize({ width: 375, height: 740 });
  for (const [route, ready] of [
    ["#/messages", "table[aria-label=messages] tbody tr"],
    ["#/dlq", "table[aria-label=dlq] tbody tr"],
    ["#/kv/default", "table[aria-label=keys] tbody tr"],
  ] as const) {
    await page.goto(`${env.url}${route}`);
    await page.locator(ready).first().waitFor();
    expect(await overflow(), route).toBe(0);
  }
  await page.locator("table[aria-label=keys] tbody tr").first().click();
  const panel = page.locator("aside.panel");
  await panel.locator("table.members").waitFor();
  expect(await overflow()).toBe(0);
  // The panel follows the list at full width rather than squeezing beside it.
  expect((await panel.boundingBox())?.width).toBeGreaterThan(340);
  await env.shot(page, "layout-375-kv");
  await page.setViewportSize({ width: 1440, height: 900 });
});

test("forms submit on Enter; TTL and scores are checked before anything is sent", async () => {
  await page.goto(`${env.url}#/kv/default`);
  await page.locator("table[aria-label=keys] tbody tr").first().click();
  const panel = page.locator("aside.panel");
  await panel.locator("input[name=add-field]").fill("added");
  await panel.locator("input[name=add-value]").fill("by Enter");
  await panel.locator("input[name=add-value]").press("Enter");
  const key = `user:${"long-name-".repeat(12)}`;
  await eventually(async () => expect(await redisOn(env, "HGET", key, "added")).toBe("by Enter"));
  await panel.locator("input[name=ttl]").fill(" 120 ");
  await panel.locator("input[name=ttl]").press("Enter");
  await eventually(async () => expect(Number(await redisOn(env, "TTL", key))).toBeGreaterThan(100));
  await panel.locator("input[name=ttl]").fill("12abc");
  await expect(panel.getByRole("button", { name: "Set TTL" }).isDisabled()).resolves.toBe(true);

  await redisOn(env, "ZADD", "scores", "1", "m");
  await page.goto(`${env.url}#/kv/default/key/scores`);
  await panel.locator("input[aria-label='value of m']").fill("ten");
  await panel.locator("tr", { hasText: "m" }).getByRole("button", { name: "Save" }).click();
  await page.locator(".toast", { hasText: 'a score must be a number, not "ten"' }).waitFor();
  expect(await redisOn(env, "ZSCORE", "scores", "m")).toBe("1");
});
