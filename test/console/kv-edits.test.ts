import type { Page } from "playwright-core";
import { expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import { pageKit, recordDialogs, type ConsoleEnv } from "./harness.js";
import { openKeyOn, redisOn } from "./kv-helpers.js";
import { useLoggedIn } from "./use-console.js";

/**
 * Issue 26's KV editor bugs in chromium against a real stashd: UTF-8 strings (binary ones are in
 * kv-binary-pages.test.ts), list edits by index, compare-before-save with refresh, paging kept
 * across an edit, TTL 0, and empty hash field names.
 */
let env: ConsoleEnv;
let page: Page;
/** The messages of the confirm() boxes shown (each is accepted). */
const seen = recordDialogs();
const dialogs = seen.asked;
useLoggedIn((c) => ({ env, page } = c), { dialogs: seen });

const { panel, toast } = pageKit(() => page);
const redis = (...args: string[]) => redisOn(env, ...args);
const openKey = (key: string) => openKeyOn(env, page, key);
const textarea = () => panel().locator("textarea[name=value]");
const saveValue = () => panel().locator(".editor").getByRole("button", { name: "Save" });

test("a UTF-8 string (München) is shown whole and saved", async () => {
  await redis("SET", "user:42:city", "München");
  await openKey("user:42:city");
  await expect(textarea().inputValue()).resolves.toBe("München");
  await panel().getByText("8 bytes").waitFor();
  expect(await panel().getByText("Showing the first").count()).toBe(0);
  await textarea().fill("Zürich ☕ 東京");
  await saveValue().click();
  await eventually(async () => expect(await redis("GET", "user:42:city")).toBe("Zürich ☕ 東京"));
  await env.shot(page, "kv-utf8");
});

test("list: Remove takes out the element at its index, not the first equal one", async () => {
  await redis("RPUSH", "dups", "a", "b", "a", "c", "a");
  await openKey("dups");
  await panel().locator("tbody tr").nth(2).getByRole("button", { name: "Remove" }).click();
  await eventually(async () =>
    expect(await redis("LRANGE", "dups", "0", "-1")).toEqual(["a", "b", "c", "a"]),
  );
  await eventually(async () => expect(await panel().locator("tbody tr").count()).toBe(4));
});

test("a value changed since it was loaded is not overwritten; Refresh shows the new one", async () => {
  await redis("SET", "shared", "v1");
  await openKey("shared");
  await eventually(async () => expect(await textarea().inputValue()).toBe("v1"));
  await redis("SET", "shared", "v2 from elsewhere");
  await textarea().fill("v3 from the console");
  await saveValue().click();
  await panel().locator("[data-stale]").waitFor();
  await toast("changed since it was loaded");
  expect(await redis("GET", "shared")).toBe("v2 from elsewhere");
  await env.shot(page, "kv-stale");
  await panel().getByRole("button", { name: "Refresh" }).click();
  await eventually(async () => expect(await textarea().inputValue()).toBe("v2 from elsewhere"));
  await panel().locator("[data-stale]").waitFor({ state: "detached" });

  await redis("HSET", "h", "f", "old");
  await openKey("h");
  const field = panel().locator("input[aria-label='value of f']");
  await eventually(async () => expect(await field.inputValue()).toBe("old"));
  await redis("HSET", "h", "f", "newer");
  await field.fill("mine");
  await panel().locator("tr", { hasText: "f" }).getByRole("button", { name: "Save" }).click();
  await panel().locator("[data-stale]").waitFor();
  expect(await redis("HGET", "h", "f")).toBe("newer");
});

test("editing a list element on the second page keeps the second page shown", async () => {
  const items = Array.from({ length: 150 }, (_, i) => `item-${i}`);
  await redis("RPUSH", "long", ...items);
  await openKey("long");
  await panel().getByRole("button", { name: "Load more" }).click();
  const input = panel().locator("input[aria-label='value of 120']");
  await input.fill("edited");
  await panel().locator("tbody tr").nth(120).getByRole("button", { name: "Save" }).click();
  await eventually(async () => expect(await redis("LINDEX", "long", "120")).toBe("edited"));
  await toast("Saved");
  await eventually(async () => expect(await panel().locator("tbody tr").count()).toBe(150));
  await expect(input.inputValue()).resolves.toBe("edited");
});

test("a TTL of 0 asks before it deletes the key", async () => {
  await redis("SET", "doomed", "x");
  await openKey("doomed");
  dialogs.length = 0;
  await panel().locator("input[name=ttl]").fill("0");
  await panel().getByRole("button", { name: "Set TTL" }).click();
  await eventually(() => expect(dialogs).toEqual(["A TTL of 0 deletes the key now. Delete it?"]));
  await eventually(async () => expect(await redis("EXISTS", "doomed")).toBe(0));
});

test("a hash field without a name is refused", async () => {
  await redis("HSET", "named", "a", "1");
  await openKey("named");
  await panel().locator("input[name=add-value]").fill("no name");
  await panel().getByRole("button", { name: "Add" }).click();
  await toast("a hash field needs a name");
  expect(await redis("HGETALL", "named")).toEqual(["a", "1"]);
});
