import type { Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { loggedIn, type ConsoleEnv, type Dialogs } from "./harness.js";

/**
 * A test file's console: `beforeAll` starts one with a logged-in page (harness.ts, `loggedIn`)
 * and hands both to `set`, which keeps them in the file's own variables; `afterAll` stops it.
 *
 *     let env: ConsoleEnv;
 *     let page: Page;
 *     useLoggedIn((c) => ({ env, page } = c));
 *
 * (Apart from harness.ts because it registers vitest hooks: bench/console.ts imports harness.ts
 * outside vitest.)
 */
export function useLoggedIn(
  set: (c: { env: ConsoleEnv; page: Page }) => void,
  opts: { dialogs?: Dialogs } = {},
): void {
  let env: ConsoleEnv | undefined;
  beforeAll(async () => {
    const c = await loggedIn(opts);
    env = c.env;
    set(c);
  }, 60_000);
  afterAll(() => env?.close());
}
