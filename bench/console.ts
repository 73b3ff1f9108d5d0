/**
 * Console first-render benchmark (issue 26): `npm run bench:console [-- --runs N] [--profile]
 * [--smoke]`.
 *
 * A stashd (in this process, as the console tests run it) seeded with issue 26's data
 * (test/console/tour-seed.ts, ISSUE_SEED: 59 assorted publishes, 3,300 more with 323 in the DLQ,
 * 5 schedules, 7 workflow runs, 3,500 keys of every type with odd names, two databases, a
 * 10,000-field hash) and Debian's chromium driven by playwright-core. Each page of the console
 * (test/console/tour-stops.ts) is opened **cold**: a new browser context (empty cache, no script
 * state) with the session cookie loads `/console#/<page>`; pages are taken in turn, N rounds.
 *
 * Per page, the median of the N opens of:
 * - **first render**: from the navigation's start to the first animation frame in which the
 *   page's content is visible (its main table's first row, its panel, its first step: the stop's
 *   selector), read in the page (`performance.now()` polled every frame);
 * - **in app**: the same page reached by a link inside a console tab already open (the hash set
 *   from another page), from the hash change to its first render;
 * - **boot**: until the first console API call starts (HTML, the bundle, its start-up);
 * - **server**: the console API calls that ended before it (the live-count poll `summary` left
 *   out: the page does not wait for it), the sum of their `Server-Timing` (time in stashd);
 * - **API wait**: the time during which at least one of those calls was in flight;
 * - **after data**: from the last of those answers to the first render (the page's own work);
 * - **script** and **layout**: Chromium's ScriptDuration and LayoutDuration + RecalcStyleDuration
 *   for the page until then (CDP `Performance.getMetrics`).
 * `--profile` also writes one CPU profile per page (CDP `Profiler`, open it in DevTools) to
 * test-artifacts/bench-console/ and prints each page's busiest functions.
 * `--smoke` seeds a tiny data set and opens each page once (test/bench/console-smoke.test.ts).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import os from "node:os";
import path from "node:path";
import type { BrowserContext, CDPSession, Page } from "playwright-core";
import { consoleCookie, consoleEnv, type ConsoleEnv } from "../test/console/harness.js";
import {
  ISSUE_SEED,
  seedConsole,
  type SeedIds,
  type SeedShape,
} from "../test/console/tour-seed.js";
import { MORE_STOPS, TOUR_STOPS, type Stop } from "../test/console/tour-stops.js";
import { startApp } from "../test/workflow/harness.js";

const smoke = process.argv.includes("--smoke");
const profile = process.argv.includes("--profile");
const option = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
};
const RUNS = smoke ? 1 : Number(option("--runs")) || 3;
const SMOKE_SEED: SeedShape = {
  delivered: 20,
  delayed: 20,
  failed: 3,
  assorted: 5,
  sleepingRuns: 1,
  failedRuns: 1,
  keys: 70,
  oddNames: true,
  secondDatabase: true,
};
/** Issue 26's targets: every page's first render, and a key of 10,000 elements. */
const PAGE_TARGET_MS = 300;
const BIG_KEY_TARGET_MS = 500;
const OUT = path.resolve("test-artifacts", "bench-console");

/** One cold open of one page: what the browser saw, in ms from the navigation's start. */
interface Sample {
  total: number;
  boot: number;
  server: number;
  apiWait: number;
  afterData: number;
  script: number;
  layout: number;
  calls: number;
  /** The call that took stashd longest, e.g. "kv/default/scan… 180 ms" (not a figure). */
  slowest: string;
}
type Figure = Exclude<keyof Sample, "slowest">;
const FIGURES: Figure[] = [
  "total",
  "boot",
  "server",
  "apiWait",
  "afterData",
  "script",
  "layout",
  "calls",
];

/** A console API call as the page's resource timing recorded it. */
interface ApiCall {
  path: string;
  start: number;
  end: number;
  server: number;
}

/** The little of the DOM that `readyAt` uses (the bench's TypeScript has no DOM types). */
interface PageGlobals {
  document: {
    querySelectorAll(css: string): Iterable<{
      textContent: string | null;
      getBoundingClientRect(): { width: number; height: number };
    }>;
  };
  performance: { now(): number };
}

/**
 * Runs in the page: the time of the first frame in which `css` matches an element with a box
 * (and trimmed text `text`, when given); false before.
 */
function readyTime(arg: { css: string; text: string | undefined }): number | false {
  const { document, performance } = globalThis as unknown as PageGlobals;
  for (const el of document.querySelectorAll(arg.css)) {
    if (arg.text !== undefined && el.textContent?.trim() !== arg.text) continue;
    const box = el.getBoundingClientRect();
    if (box.width > 0 && box.height > 0) return performance.now();
  }
  return false;
}

/** Runs in the page: every console API call so far, with its Server-Timing. */
const API_CALLS = `performance.getEntriesByType("resource")
  .filter((e) => e.name.includes("/console/api/"))
  .map((e) => ({
    path: e.name.slice(e.name.indexOf("/console/api/") + 13),
    start: e.startTime,
    end: e.responseEnd,
    server: (e.serverTiming.find((s) => s.name === "console") || { duration: 0 }).duration,
  }))`;

async function main(): Promise<void> {
  const shape = smoke ? SMOKE_SEED : ISSUE_SEED;
  const env = await consoleEnv();
  const app = await startApp();
  try {
    const rx = await env.q.receiver();
    const seedStart = Date.now();
    const ids = await seedConsole(env, rx, app, shape);
    const seedMs = Date.now() - seedStart;
    const cookie = await consoleCookie(env);
    const stops = [...TOUR_STOPS, ...MORE_STOPS];
    printHeader(shape, seedMs);
    await openCold(env, cookie, stops[0] as Stop, ids); // warm-up: chromium's first renderer
    const samples = new Map<string, Sample[]>(stops.map((s) => [s.name, []]));
    const inApp = new Map<string, number[]>(stops.map((s) => [s.name, []]));
    const tab = await freshTab(env, cookie);
    await tab.page.goto(`${env.url}#/signing-keys`);
    for (let run = 0; run < RUNS; run++) {
      for (const stop of stops) {
        samples.get(stop.name)?.push(await openCold(env, cookie, stop, ids));
        inApp.get(stop.name)?.push(await openInApp(tab.page, stop, ids));
      }
    }
    await tab.context.close();
    printTable(stops, samples, inApp);
    if (profile) await profilePages(env, cookie, stops, ids);
    console.log(`\nuptime after: ${uptime()}`);
  } finally {
    await app.close();
    await env.close();
  }
}

/**
 * Follows a link to `stop` inside a console tab already open (as a click in the side bar does):
 * ms from setting the hash to the stop's first render, both read in the page. The tab goes to
 * another page first, one without the stop's content.
 */
async function openInApp(page: Page, stop: Stop, ids: SeedIds): Promise<number> {
  const away = stop.name === "signing-keys" ? "#/url-groups" : "#/signing-keys";
  await page.evaluate(`location.hash = ${JSON.stringify(away)}`);
  await page.locator("nav.side a.active").first().waitFor();
  const go = `(() => { const t = performance.now(); location.hash = ${JSON.stringify(stop.route(ids))}; return t; })()`;
  const start = Number(await page.evaluate(go));
  return (await readyAt(page, stop)) - start;
}

/** Opens `stop` in a fresh context (cold cache) logged in with `cookie`; measures its render. */
async function openCold(
  env: ConsoleEnv,
  cookie: string,
  stop: Stop,
  ids: SeedIds,
): Promise<Sample> {
  const { context, page, cdp } = await freshTab(env, cookie);
  try {
    await cdp.send("Performance.enable");
    await page.goto(`${env.url}${stop.route(ids)}`, { waitUntil: "commit" });
    const total = await readyAt(page, stop);
    const calls = ((await page.evaluate(API_CALLS)) as ApiCall[]).filter(
      (c) => c.end <= total && !c.path.startsWith("summary"),
    );
    const metrics = await metricsOf(cdp);
    const lastAnswer = Math.max(0, ...calls.map((c) => c.end));
    const slowest = [...calls].sort((a, b) => b.server - a.server)[0];
    return {
      total,
      boot: Math.min(total, ...calls.map((c) => c.start)),
      server: calls.reduce((sum, c) => sum + c.server, 0),
      apiWait: unionLength(calls),
      afterData: total - lastAnswer,
      script: metrics["ScriptDuration"] ?? 0,
      layout: (metrics["LayoutDuration"] ?? 0) + (metrics["RecalcStyleDuration"] ?? 0),
      calls: calls.length,
      slowest: slowest ? `${slowest.path.slice(0, 40)} ${Math.round(slowest.server)}` : "",
    };
  } finally {
    await context.close();
  }
}

async function freshTab(
  env: ConsoleEnv,
  cookie: string,
): Promise<{ context: BrowserContext; page: Page; cdp: CDPSession }> {
  if (!env.browser) throw new Error("no browser");
  const context = await env.browser.newContext({ viewport: { width: 1280, height: 800 } });
  const [name = "", value = ""] = cookie.split("=");
  const { hostname } = new URL(env.url);
  await context.addCookies([{ name, value, domain: hostname, path: "/console", httpOnly: true }]);
  const page = await context.newPage();
  return { context, page, cdp: await context.newCDPSession(page) };
}

/** The page's clock (ms since its navigation started) at the stop's first meaningful render. */
async function readyAt(page: Page, stop: Stop): Promise<number> {
  const handle = await page.waitForFunction(
    readyTime,
    { css: stop.css, text: stop.text },
    { polling: "raf", timeout: 20_000 },
  );
  return Number(await handle.jsonValue());
}

/** Chromium's cumulative page metrics, durations in ms. */
async function metricsOf(cdp: CDPSession): Promise<Record<string, number>> {
  const { metrics } = await cdp.send("Performance.getMetrics");
  return Object.fromEntries(metrics.map((m) => [m.name, m.value * 1000]));
}

/** How long at least one of `calls` was in flight. */
function unionLength(calls: ApiCall[]): number {
  let total = 0;
  let until = -Infinity;
  for (const c of [...calls].sort((a, b) => a.start - b.start)) {
    if (c.end <= until) continue;
    total += c.end - Math.max(c.start, until);
    until = c.end;
  }
  return total;
}

const median = (xs: number[]): number =>
  [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? NaN;

function uptime(): string {
  try {
    return execFileSync("uptime", { encoding: "utf8" }).trim();
  } catch {
    return `load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(", ")}`;
  }
}

function printHeader(shape: SeedShape, seedMs: number): void {
  const cpu = os.cpus()[0]?.model ?? "?";
  console.log(`# bench:console, ${new Date().toISOString()}${smoke ? " (smoke)" : ""}`);
  console.log(
    `machine: ${os.availableParallelism()} cores (${cpu}), ${Math.round(os.totalmem() / 2 ** 30)} GiB`,
  );
  console.log(`uptime before: ${uptime()}`);
  console.log(`seed (${seedMs} ms): ${JSON.stringify(shape)}`);
  console.log(`each page opened cold ${RUNS} time(s), in turn; medians in ms\n`);
}

function printTable(stops: Stop[], samples: Map<string, Sample[]>, inApp: Map<string, number[]>) {
  console.log(
    "| page | first render | in app | boot | server | API wait | after data | script | layout | calls | slowest call, ms (last run) |",
  );
  console.log("| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --- |");
  const over = { cold: [] as string[], inApp: [] as string[] };
  for (const stop of stops) {
    const runs = samples.get(stop.name) ?? [];
    const of = (f: Figure) => Math.round(median(runs.map((s) => s[f])));
    const linked = Math.round(median(inApp.get(stop.name) ?? []));
    const cells = [of("total"), linked, ...FIGURES.slice(1).map(of)];
    const slowest = runs[runs.length - 1]?.slowest ?? "";
    console.log(`| ${stop.name} | ${cells.join(" | ")} | ${slowest} |`);
    const target = stop.name === "kv-key" ? BIG_KEY_TARGET_MS : PAGE_TARGET_MS;
    if (of("total") > target) over.cold.push(`${stop.name} ${of("total")} ms`);
    if (linked > target) over.inApp.push(`${stop.name} ${linked} ms`);
  }
  const verdict = (late: string[]) => (late.length === 0 ? "met" : `not met (${late.join(", ")})`);
  const goal = `every page ≤ ${PAGE_TARGET_MS} ms, the 10,000-field key ≤ ${BIG_KEY_TARGET_MS} ms`;
  console.log(`\ngoal, opened cold: ${goal}: ${verdict(over.cold)}`);
  console.log(`goal, in app: ${goal}: ${verdict(over.inApp)}`);
}

/** One more cold open per page under CDP's sampling profiler; writes and summarises each. */
async function profilePages(env: ConsoleEnv, cookie: string, stops: Stop[], ids: SeedIds) {
  mkdirSync(OUT, { recursive: true });
  console.log(`\n## CPU profiles (${OUT}), busiest functions by self time`);
  for (const stop of stops) {
    const { context, page, cdp } = await freshTab(env, cookie);
    try {
      await cdp.send("Profiler.enable");
      await cdp.send("Profiler.setSamplingInterval", { interval: 100 });
      await cdp.send("Profiler.start");
      await page.goto(`${env.url}${stop.route(ids)}`, { waitUntil: "commit" });
      await readyAt(page, stop);
      const { profile: p } = await cdp.send("Profiler.stop");
      writeFileSync(path.join(OUT, `${stop.name}.cpuprofile`), JSON.stringify(p));
      console.log(`- ${stop.name}: ${busiest(p as CpuProfile).join(", ")}`);
    } finally {
      await context.close();
    }
  }
}

/** The parts of a CDP `Profiler.Profile` read here. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples?: number[];
  timeDeltas?: number[];
}

/** The 5 functions with the most self time in `p` ("name (file:line) N ms"). */
function busiest(p: CpuProfile): string[] {
  const selfUs = new Map<number, number>();
  (p.samples ?? []).forEach((id, i) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (p.timeDeltas?.[i] ?? 0));
  });
  const byName = new Map<string, number>();
  for (const node of p.nodes) {
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === "(idle)" || functionName === "(program)") continue;
    const name = `${functionName || "(anonymous)"} (${path.basename(url) || "-"}:${lineNumber + 1})`;
    byName.set(name, (byName.get(name) ?? 0) + (selfUs.get(node.id) ?? 0));
  }
  return [...byName.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5)
    .map(([name, us]) => `${name} ${(us / 1000).toFixed(1)} ms`);
}

await main();
