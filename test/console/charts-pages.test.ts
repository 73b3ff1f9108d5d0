import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { credentialsOf } from "../../src/kv/databases/database-manager.js";
import { createDatabase } from "../../src/kv/databases/registry.js";
import { kvCommands } from "../../src/admin/console/upstream.js";
import { eventually } from "../harness/eventually.js";
import { consoleEnv, type ConsoleEnv } from "./harness.js";
import { renderMs, startDestination, type Destination } from "./queue-seed.js";
import { recordRender } from "./render-times.js";

/** Charts (docs/console.md, Charts), with 300 ms steps instead of a minute (60 points: 18 s). */
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
});

test("the KV chart shows commands per second per database; the table, commands and keys now", async () => {
  const cache = credentialsOf(createDatabase(env.q.stashd.config.dataDir, "cache"));
  // Until the new database is served its token is refused (not counted): INCR until one answers
  // 5, so exactly 5 commands ran there. On `default`, one pipeline of 100 commands.
  await eventually(async () => {
    const [reply] = await kvCommands(env.q.stashd.kv.url, cache.token, [["INCR", "c"]]);
    expect(reply).toEqual({ result: 5 });
  });
  const sets = Array.from({ length: 100 }, (_, i) => ["SET", `k${i}`, "v"]);
  const replies = await kvCommands(env.q.stashd.kv.url, env.q.stashd.kv.token, sets);
  expect(replies).toHaveLength(100);
  await eventually(async () => {
    const res = await page.evaluate(async () => (await fetch("/console/api/charts")).json());
    const points = (res as { points: { kvCommands: Record<string, number> }[] }).points;
    const sum = (db: string) => points.reduce((n, p) => n + (p.kvCommands[db] ?? 0), 0);
    expect({ default: sum("default"), cache: sum("cache") }).toEqual({ default: 100, cache: 5 });
  });
  // The key counts sampled at a step's end (after the commands above ran in Redis).
  await eventually(async () => {
    const res = await page.evaluate(async () => (await fetch("/console/api/charts")).json());
    const last = (res as { points: { keys: Record<string, number> }[] }).points.at(-1);
    expect(last?.keys).toEqual({ default: 100, cache: 1 });
  });
  // Away and back: the page loads the charts again.
  await page.goto(`${env.url}#/pending`);
  await page.goto(`${env.url}#/charts`);
  const kvChart = page.locator("figure.chart[aria-label='KV commands per second, per database']");
  await kvChart.locator("[data-series='cache']").waitFor();
  await expect(kvChart.locator("[data-series]").allTextContents()).resolves.toEqual([
    expect.stringMatching(/^ default: [\d,.]+\/s$/),
    expect.stringMatching(/^ cache: [\d,.]+\/s$/),
  ]);
  await expect(kvChart.locator("polyline").count()).resolves.toBe(2);
  const keysChart = page.locator("figure.chart[aria-label='Keys per database (end of each step)']");
  await expect(keysChart.locator("[data-series]").allTextContents()).resolves.toEqual([
    " default: 100",
    " cache: 1",
  ]);
  const messages = page.locator("figure.chart[aria-label='Messages per 300 ms']");
  // The messages chart's legend gives totals over the kept points, not the last step's.
  await expect(messages.locator("[data-series='published']").textContent()).resolves.toMatch(
    /^ published: \d+ in all$/,
  );
  const row = (db: string) =>
    page
      .locator("table[aria-label='Per database'] tbody tr")
      .filter({ has: page.locator("code", { hasText: new RegExp(`^${db}$`) }) })
      .locator("td");
  const cells = async (db: string) => {
    const all = await row(db).allTextContents();
    return [all[0], all[1], all[4]];
  };
  await expect(cells("default")).resolves.toEqual(["default", "100", "100"]);
  await expect(cells("cache")).resolves.toEqual(["cache", "5", "1"]);
  await env.shot(page, "charts");
});
