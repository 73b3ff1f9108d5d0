import type { Page } from "playwright-core";
import { beforeAll, expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import type { TestReceiver } from "../queue/receiver.js";
import { recordDialogs, type ConsoleEnv } from "./harness.js";
import { useLoggedIn } from "./use-console.js";

/**
 * Issue 26's form bugs in chromium against a real stashd: Enter submits the schedule, queue and
 * URL-group forms; parallelism is validated before sending; a schedule id in use is replaced only
 * after a question ("Cancel all matching": bulk-pages.test.ts).
 */
let env: ConsoleEnv;
let page: Page;
let rx: TestReceiver;
/** Questions asked (confirm boxes), and whether the next ones are answered yes. */
const dialogs = recordDialogs();
const asked = dialogs.asked;

useLoggedIn((c) => ({ env, page } = c), { dialogs });
beforeAll(async () => {
  rx = await env.q.receiver();
});

const api = async <T>(path: string): Promise<T> => (await env.q.api(path)).json() as Promise<T>;
const toast = (text: string) => page.locator(".toast", { hasText: text }).first().waitFor();

test("Enter submits the queue form; parallelism abc or 0 is refused before sending", async () => {
  await page.goto(`${env.url}#/queues`);
  await page.fill("input[name=queueName]", "enter-q");
  await page.fill("input[name=parallelism]", "abc");
  await page.press("input[name=parallelism]", "Enter");
  await toast('parallelism must be a whole number of 1 or more, not "abc"');
  await page.fill("input[name=parallelism]", "0");
  await page.press("input[name=parallelism]", "Enter");
  await toast('not "0"');
  expect((await env.q.api("/v2/queues/enter-q")).status).toBe(404);
  await page.fill("input[name=parallelism]", "4");
  await page.press("input[name=queueName]", "Enter");
  await toast("Queue saved");
  await eventually(async () =>
    expect((await api<{ parallelism: number }>("/v2/queues/enter-q")).parallelism).toBe(4),
  );
});

test("Enter submits the URL-group form", async () => {
  await page.goto(`${env.url}#/url-groups`);
  await page.fill("input[name=group]", "enter-g");
  await page.fill("input[name=endpointUrl]", `${rx.url}/e`);
  await page.press("input[name=endpointUrl]", "Enter");
  await toast("Endpoint added");
  const g = await api<{ endpoints: { url: string }[] }>("/v2/topics/enter-g");
  expect(g.endpoints.map((e) => e.url)).toEqual([`${rx.url}/e`]);
});

interface Schedule {
  destination: string;
  cron: string;
}

test("Enter submits the schedule form; a schedule id in use is replaced only when confirmed", async () => {
  await page.goto(`${env.url}#/schedules`);
  const create = async (path: string, cron: string) => {
    await page.fill("input[name=destination]", `${rx.url}/${path}`);
    await page.fill("input[name=cron]", cron);
    await page.fill("input[name=scheduleId]", "reused");
    await page.press("input[name=destination]", "Enter");
  };
  await create("first", "*/5 * * * *");
  await toast("Schedule created");
  expect((await api<Schedule>("/v2/schedules/reused")).destination).toBe(`${rx.url}/first`);

  asked.length = 0;
  dialogs.answer = false;
  await create("second", "*/7 * * * *");
  await eventually(() =>
    expect(asked).toEqual([`Schedule reused exists (*/5 * * * * → ${rx.url}/first). Replace it?`]),
  );
  expect((await api<Schedule>("/v2/schedules/reused")).destination).toBe(`${rx.url}/first`);

  dialogs.answer = true;
  await page.press("input[name=destination]", "Enter");
  await eventually(async () =>
    expect((await api<Schedule>("/v2/schedules/reused")).destination).toBe(`${rx.url}/second`),
  );
});

test("no horizontal overflow at 1280 and 1440 px on a message with a long URL and body", async () => {
  const { messageId } = await env.q.client.publishJSON({
    url: `${rx.url}/a-rather-long-path/that/goes/on/and/on?with=query&and=more`,
    body: { wide: "x".repeat(300) },
    delay: 3600,
  });
  for (const width of [1280, 1440]) {
    await page.setViewportSize({ width, height: 800 });
    await page.goto(`${env.url}#/messages/${messageId}`);
    await page.locator(".body-block").waitFor();
    // Elements wider than their box (run in the page: the test's TypeScript has no DOM types).
    const overflow = (await page.evaluate(`
      [...document.querySelectorAll("body, .content, .page, .main, .card")]
        .filter((el) => el.scrollWidth > el.clientWidth + 1)
        .map((el) => (el.className || el.tagName) + ": " + el.scrollWidth + " > " + el.clientWidth)
    `)) as string[];
    await env.shot(page, `layout-${width}`);
    expect(overflow).toEqual([]);
  }
});
