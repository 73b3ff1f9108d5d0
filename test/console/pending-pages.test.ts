import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import type { ConsoleEnv } from "./harness.js";
import {
  renderMs,
  seededConsole,
  type Destination,
  type Seeded,
  type SeededConsole,
} from "./queue-seed.js";
import { recordRender } from "./render-times.js";

/** Polls wait as long as the harness's other waits: a loaded CI machine is slow to render. */
const POLL = { timeout: 10_000 };

/** "Pending now" (docs/console.md) on a seeded queue with a FIFO queue and a URL group. */
let env: ConsoleEnv;
let page: Page;
let seed: Seeded;
let seeded: SeededConsole | undefined;

/** FIFO queue "orders", parallelism 1: the first stays in flight (/slow), two wait for the slot. */
async function queueAndGroup(e: ConsoleEnv, dest: Destination): Promise<void> {
  const client = e.q.client;
  await client.queue({ queueName: "orders" }).upsert({ parallelism: 1 });
  for (const n of [1, 2, 3]) {
    await client
      .queue({ queueName: "orders" })
      .enqueueJSON({ url: `${dest.url}/slow`, body: { n } });
  }
  await client.urlGroups.addEndpoints({
    name: "fanout",
    endpoints: [{ url: `${dest.url}/a` }, { url: `${dest.url}/b` }],
  });
  await client.publishJSON({ urlGroup: "fanout", body: { to: "all" }, delay: 1800 });
  await eventually(async () => {
    const r = await e.q.api("/v2/events?queueName=orders&state=ACTIVE");
    expect(((await r.json()) as { events: unknown[] }).events).toHaveLength(1);
  });
}

beforeAll(async () => {
  seeded = await seededConsole(500, queueAndGroup);
  ({ env, page, seed } = seeded);
}, 120_000);
afterAll(() => seeded?.close());

const tab = (name: string) => page.getByRole("tab", { name: new RegExp(`^${name} `) });

test("tabs by state with counts that add up, per queue and per URL group", async () => {
  const ms = await renderMs(page, "#/pending", page.locator("[data-pending-total]"));
  recordRender("pending now", ms);
  // 1 retrying + 1 delayed (seed) + 2 delayed (fanout) + 1 in flight + 2 waiting (orders) = 7.
  const sum = page.locator("[data-pending-total]");
  await expect(sum.textContent()).resolves.toMatch(
    /^7 pending = 0 ready \+ 3 delayed \+ 1 in flight \+ 1 retrying \+ 2 waiting \+ 0 other/,
  );
  await expect(tab("Delayed").textContent()).resolves.toBe("Delayed 3");
  const groups = page.locator("table[aria-label='pending groups'] tbody tr");
  await expect(groups.filter({ hasText: "orders" }).textContent()).resolves.toMatch(
    /Queueorders0010203/,
  );
  await expect(groups.filter({ hasText: "fanout" }).textContent()).resolves.toMatch(
    /URL groupfanout0200002/,
  );
  await tab("Delayed").click();
  await page.locator("table[aria-label=pending] tbody tr").nth(2).waitFor();
  await env.shot(page, "pending");
});

test("each tab lists its messages with until when; a group narrows the list", async () => {
  await page.goto(`${env.url}#/pending`);
  await tab("Retrying").click();
  const rows = page.locator("table[aria-label=pending] tbody tr");
  await rows
    .filter({ hasText: seed.retrying })
    .getByText(/UTC.*\(in 10m\)/)
    .waitFor();
  await tab("Delayed").click();
  await expect.poll(() => rows.count(), POLL).toBe(3);
  await rows
    .filter({ hasText: seed.delayed })
    .getByText(/\(in 60m\)/)
    .waitFor();
  await page.locator("table[aria-label='pending groups'] tbody tr", { hasText: "fanout" }).click();
  await page.getByText("Showing URL group fanout only.").waitFor();
  await expect.poll(() => rows.count(), POLL).toBe(2);
  await tab("Waiting").click();
  await page.getByText("No waiting message.").waitFor();
  await page.getByRole("button", { name: "Show all" }).click();
  await expect.poll(() => rows.count(), POLL).toBe(2);
  await expect(rows.first().textContent()).resolves.toContain("queue orders");
  await tab("In flight").click();
  await rows.first().getByText("Lease until", { exact: false }).count();
  await rows.first().click();
  await page.waitForURL(/#\/messages\/msg_/);
});
