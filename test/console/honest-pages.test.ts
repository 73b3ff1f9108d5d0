import { rmSync } from "node:fs";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { QueueService } from "../../src/queue/service.js";
import { eventually } from "../harness/eventually.js";
import { startClockedQueue, TestClock } from "../queue/setup.js";
import { consoleEnv, type ConsoleEnv } from "./harness.js";
import { startDestination, type Destination } from "./queue-seed.js";

/**
 * Honest state (docs/console.md): times carry their zone, crons are explained in words, a
 * schedule whose last run failed says so, and a list that cannot load shows the error.
 */
let env: ConsoleEnv;
let page: Page;
let dest: Destination;
let ticker: QueueService | undefined;
const dirs: string[] = [];

beforeAll(async () => {
  env = await consoleEnv();
  dest = await startDestination();
  if (!env.browser) throw new Error("no browser");
  // A browser in Berlin: times show their offset from UTC.
  page = await env.browser.newPage({
    viewport: { width: 1440, height: 900 },
    timezoneId: "Europe/Berlin",
  });
  page.setDefaultTimeout(10_000);
  page.on("dialog", (d) => void d.accept());
  await env.login(page);
}, 60_000);
afterAll(async () => {
  await ticker?.close();
  await dest?.close();
  await env?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const MIN = 60_000;

test("times carry their zone; crons are explained in words; a failed last run is marked", async () => {
  await env.q.client.schedules.create({
    destination: `${dest.url}/bin`,
    cron: "* * * * *",
    scheduleId: "failing",
    retries: 0,
  });
  await env.q.client.schedules.create({
    destination: `${dest.url}/ok`,
    cron: "30 4 * * 1",
    scheduleId: "weekly",
  });
  // A second queue process on the same Redis whose clock is at the next minute fires the tick.
  const clock = new TestClock(Math.floor(Date.now() / MIN) * MIN + MIN + 1);
  ticker = await startClockedQueue(env.q.redis.url, clock, dirs, {
    queueToken: env.q.stashd.queue.token,
    queueCurrentSigningKey: env.q.keys.current,
    queueNextSigningKey: env.q.keys.next,
  });
  await eventually(
    async () => {
      const s = (await (await env.q.api("/v2/schedules/failing")).json()) as {
        lastScheduleStates: Record<string, string>;
      };
      expect(Object.values(s.lastScheduleStates)).toEqual(["FAIL"]);
    },
    { timeoutMs: 20_000 },
  );
  await page.goto(`${env.url}#/schedules`);
  const failing = page.locator("table[aria-label=schedules] tbody tr", { hasText: "failing" });
  await failing.getByText("LAST RUN FAILED", { exact: true }).waitFor();
  await failing.getByText("1 of 1 deliveries of the last run failed").waitFor();
  await failing.getByText("Every minute (UTC)").waitFor();
  const weekly = page.locator("table[aria-label=schedules] tbody tr", { hasText: "weekly" });
  await weekly.getByText("At 04:30, only on Monday (UTC)").waitFor();
  await expect(weekly.locator("[data-last-run]").count()).resolves.toBe(0);
  await expect(weekly.textContent()).resolves.toMatch(/\d\d:\d\d:\d\d UTC\+01:00/);
  await env.shot(page, "schedules-honest");
});

test("a list that cannot load shows the error, never an empty list", async () => {
  await ticker?.close();
  ticker = undefined;
  await page.goto(`${env.url}#/pending`);
  await page.locator("[data-pending-total]").waitFor();
  await env.q.redis.stop();
  await page.goto(`${env.url}#/messages`);
  await page.locator("[data-list-error=messages]").waitFor({ timeout: 40_000 });
  await expect(page.getByText("No message matches.").count()).resolves.toBe(0);
  await page.goto(`${env.url}#/pending`);
  await page.locator("[data-list-error=pending]").waitFor({ timeout: 40_000 });
  await expect(page.getByText("No ready message.").count()).resolves.toBe(0);
});
