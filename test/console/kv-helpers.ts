import type { Page } from "playwright-core";
import { eventually } from "../harness/eventually.js";
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

/** Keys fillUntilRefused wrote so far in this test file (their names number on). */
let filled = 0;

/**
 * Writes `size`-byte values to the default database until Redis refuses one (507, its max data
 * size); answers the refusal's error and how many keys were written.
 */
export async function fillUntilRefused(
  env: ConsoleEnv,
  size: number,
): Promise<{ error: string; keys: number }> {
  for (let i = 0; i < 8192; i++) {
    const res = await env.q.stashd.kvFetch("/", {
      body: JSON.stringify(["SET", `cache:item:${++filled}`, "v".repeat(size)]),
    });
    if (res.status === 507)
      return { error: ((await res.json()) as { error: string }).error, keys: i };
  }
  throw new Error(`8,192 writes of ${size} bytes were all accepted`);
}

/**
 * Fills the default database until it is full as the console shows it (`isFull`): 4 KiB values
 * until one is refused, then 256-byte ones until `isFull` holds after a refusal. Small values on
 * purpose: Redis counts the buffers of requests being read in its memory, and large ones left on
 * idle connections are trimmed a few seconds later, which would make room again.
 */
export async function fillUntilFull(
  env: ConsoleEnv,
  isFull: () => Promise<boolean>,
): Promise<{ error: string; keys: number }> {
  let keys = 0;
  const fill = async (size: number) => {
    const refused = await fillUntilRefused(env, size);
    keys += refused.keys;
    return refused.error;
  };
  let error = await fill(4096);
  await eventually(async () => {
    error = await fill(256);
    // No `expect` here: bench/console.ts runs this module outside vitest.
    if (!(await isFull())) throw new Error("the console does not show the database full yet");
  });
  return { error, keys };
}
