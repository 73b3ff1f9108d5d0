import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import { consoleEnv, type ConsoleEnv } from "./harness.js";
import { renderMs, startDestination, type Destination } from "./queue-seed.js";
import { recordRender } from "./render-times.js";

/** Charts (docs/console.md, Charts), with 300 ms steps instead of a minute. */
let env: ConsoleEnv;
let page: Page;
let dest: Destination;

beforeAll(async () => {
  env = await consoleEnv({ start: { consoleChartStepMs: 300 } });
  dest = await startDestination();
  page = await env.newPage();
  await env.login(page);
}, 60_000);
afterAll(async () => {
  await dest?.close();
  await env?.close();
});

interface Point {
  byHost: Record<string, { delivered: number; failed: number }>;
  byQueue: Record<string, { delivered: number }>;
}

test("charts show messages, backlog, durations, KV; the tables sum per queue and host", async () => {
  const client = env.q.client;
  await client.queue({ queueName: "orders" }).upsert({ parallelism: 2 });
  for (let i = 0; i < 5; i++) {
    await client.queue({ queueName: "orders" }).enqueueJSON({ url: `${dest.url}/ok`, body: { i } });
  }
  await client.batchJSON(
    Array.from({ length: 20 }, (_, i) => ({ url: `${dest.url}/ok`, body: { i } })),
  );
  await client.batch(
    Array.from({ length: 3 }, () => ({ url: `${dest.url}/bin`, body: "x", retries: 0 })),
  );
  const host = new URL(dest.url).host;
  await eventually(async () => {
    const r = await env.q.stashd.admin?.url;
    expect(r).toBeDefined();
    const res = await page.evaluate(async () => (await fetch("/console/api/charts")).json());
    const points = (res as { points: Point[] }).points;
    const sum = (f: (p: Point) => number) => points.reduce((n, p) => n + f(p), 0);
    expect(sum((p) => p.byHost[host]?.delivered ?? 0)).toBe(25);
    expect(sum((p) => p.byHost[host]?.failed ?? 0)).toBe(3);
  });
  const ms = await renderMs(page, "#/charts", page.locator("figure.chart").first());
  recordRender("charts", ms);
  await expect(page.locator("figure.chart").count()).resolves.toBe(5);
  const hosts = page.locator("table[aria-label='Per destination host, last hour'] tbody tr");
  await expect(hosts.filter({ hasText: host }).textContent()).resolves.toBe(`${host}2530`);
  const queues = page.locator("table[aria-label='Per queue, last hour'] tbody tr");
  await expect(queues.filter({ hasText: "orders" }).textContent()).resolves.toBe("orders500");
  await page.locator("figure.chart svg polyline").first().waitFor();
  await env.shot(page, "charts");
});
