import type { Page } from "playwright-core";
import type { ConsoleEnv } from "./harness.js";

/** A command on the default database with the standard token, straight through the REST API. */
export async function redisOn(env: ConsoleEnv, ...args: string[]): Promise<unknown> {
  const res = await env.q.stashd.kvFetch("/", { body: JSON.stringify(args) });
  return ((await res.json()) as { result: unknown }).result;
}

/** Opens `key` of the default database in the KV page's side panel. */
export async function openKeyOn(env: ConsoleEnv, page: Page, key: string): Promise<void> {
  await page.goto(`${env.url}#/kv/default`);
  await page.fill("input[name=pattern]", key);
  await page.selectOption("select[name=Type]", "");
  await page.getByRole("button", { name: "Scan", exact: true }).click();
  await page.locator("table[aria-label=keys] tbody tr").filter({ hasText: key }).first().click();
  await page.locator("aside.panel h2", { hasText: key }).waitFor();
}
