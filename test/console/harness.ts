import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import type { StartOptions } from "../../src/index.js";
import { queueEnv, type QueueTestEnv } from "../queue/setup.js";

/** The console's second login token in tests. */
export const CONSOLE_TOKEN = "console-test-token-0123456789";
/** Where each page's screenshot is kept (git-ignored; CI may keep it as an artifact). */
export const ARTIFACTS = path.resolve("test-artifacts", "console");
/** Debian's chromium (`npm test` installs it, see scripts/setup.mjs); CHROMIUM_PATH overrides. */
export function chromiumPath(): string {
  const chosen = process.env["CHROMIUM_PATH"];
  if (chosen) return chosen;
  const found = spawnSync("sh", ["-c", "command -v chromium"], { encoding: "utf8" });
  if (found.status !== 0) {
    throw new Error(
      "chromium not found: run `npm test` (installs it on Debian as root) or set CHROMIUM_PATH",
    );
  }
  return found.stdout.trim();
}

/**
 * A time budget on this machine now: `ms` times the load per core when the machine is busier
 * than one runnable process per core (test machines are shared; a page waiting for a CPU is not
 * a slow page). On an idle machine it is `ms`.
 */
export function loadScaled(ms: number): number {
  const load = os.loadavg()[0] ?? 0;
  return ms * Math.max(1, load / os.availableParallelism());
}

/** Logs in over plain HTTP with the queue token; answers the session cookie (`name=value`). */
export async function consoleCookie(env: ConsoleEnv): Promise<string> {
  const res = await fetch(`${env.url}/api/login`, {
    method: "POST",
    headers: { "x-stashd-console": "1", "content-type": "application/json" },
    body: JSON.stringify({ token: env.q.stashd.queue.token }),
  });
  if (res.status !== 200) throw new Error(`console login answered ${res.status}`);
  return (res.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
}

/** What a page's confirm() boxes asked, in order, and whether the next ones are answered yes. */
export interface Dialogs {
  asked: string[];
  answer: boolean;
}

/** Dialogs recorded and answered yes (set `answer` to false to dismiss the next ones). */
export function recordDialogs(): Dialogs {
  return { asked: [], answer: true };
}

export interface ConsoleEnv {
  q: QueueTestEnv;
  /** Base URL of the console, e.g. http://127.0.0.1:1234/console */
  url: string;
  /** Undefined when started with `browser: false` (API-only tests). */
  browser: Browser | undefined;
  /**
   * A fresh page in a laptop-sized window (1440×900). Its confirm() boxes are accepted, or, with
   * `dialogs`, recorded in `dialogs.asked` and answered as `dialogs.answer` says at the time.
   */
  newPage(dialogs?: Dialogs): Promise<Page>;
  /** Logs a page in through the login form with the queue token. */
  login(page: Page): Promise<void>;
  /** Saves a full-page screenshot as test-artifacts/console/<name>.png. */
  shot(page: Page, name: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * A real stashd (queue on a test redis-server, KV managed) with the console on its admin
 * listener, and Debian's chromium driven by playwright-core.
 */
export async function consoleEnv(
  opts: { browser?: boolean; start?: StartOptions } = {},
): Promise<ConsoleEnv> {
  // The console browses both services.
  const q = await queueEnv({
    consoleToken: CONSOLE_TOKEN,
    services: ["kv", "queue"],
    ...opts.start,
  });
  if (!q.stashd.admin) throw new Error("the admin listener is off");
  const url = `${q.stashd.admin.url}/console`;
  const browser =
    opts.browser === false ? undefined : await chromium.launch({ executablePath: chromiumPath() });
  mkdirSync(ARTIFACTS, { recursive: true });
  return {
    q,
    url,
    browser,
    newPage: async (dialogs) => {
      if (!browser) throw new Error("started without a browser");
      const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
      page.on("dialog", (d) => {
        dialogs?.asked.push(d.message());
        void (dialogs?.answer === false ? d.dismiss() : d.accept());
      });
      page.setDefaultTimeout(10_000);
      return page;
    },
    login: async (page) => {
      await page.goto(url);
      await page.fill("input[name=token]", q.stashd.queue.token);
      await page.click("button[type=submit]");
      await page.waitForSelector("nav.side");
    },
    shot: async (page, name) => {
      await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
    },
    close: async () => {
      await browser?.close();
      await q.close();
    },
  };
}

/**
 * A console (consoleEnv) and a page logged in to it, for a test file's `beforeAll`:
 * `({ env, page } = await loggedIn())`. `dialogs` records the page's confirm() boxes.
 */
export async function loggedIn(
  opts: { dialogs?: Dialogs; start?: StartOptions } = {},
): Promise<{ env: ConsoleEnv; page: Page }> {
  const env = await consoleEnv(opts.start ? { start: opts.start } : {});
  const page = await env.newPage(opts.dialogs);
  await env.login(page);
  return { env, page };
}

/**
 * Locators the page tests share, on the page `page()` answers (a test file's page, set in its
 * `beforeAll`): a button by its exact name, a toast (waited for), the side panel.
 */
export function pageKit(page: () => Page) {
  return {
    button: (name: string | RegExp) => page().getByRole("button", { name, exact: true }),
    toast: (text: string) => page().locator(".toast", { hasText: text }).first().waitFor(),
    panel: () => page().locator("aside.panel"),
  };
}
