import type { Page } from "playwright-core";
import { beforeAll, expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import type { TestReceiver } from "../queue/receiver.js";
import { recordDialogs, type ConsoleEnv } from "./harness.js";
import { useLoggedIn } from "./use-console.js";
import { renderMs } from "./queue-seed.js";
import { recordRender } from "./render-times.js";

/** Polls wait as long as the harness's other waits: a loaded CI machine is slow to render. */
const POLL = { timeout: 10_000 };

/** The request builder (docs/console.md, Build requests): publish and schedules, every option. */
let env: ConsoleEnv;
let page: Page;
let rx: TestReceiver;
/** The questions of the confirm() boxes shown (each is accepted). */
const seen = recordDialogs();
const asked = seen.asked;

useLoggedIn((c) => ({ env, page } = c), { dialogs: seen });
beforeAll(async () => {
  rx = await env.q.receiver();
});

const api = async <T>(path: string): Promise<T> => (await env.q.api(path)).json() as Promise<T>;
const fill = async (fields: Record<string, string>) => {
  for (const [name, value] of Object.entries(fields)) {
    await page.fill(`[name=${name}]`, value);
  }
};

test("publish a test message with every option; Enter sends it and opens its page", async () => {
  const ms = await renderMs(page, "#/publish", page.locator("form.builder"));
  recordRender("publish", ms);
  await page.selectOption("select[name=Method]", "PUT");
  await fill({
    destination: `${rx.url}/built`,
    contentType: "text/plain",
    headers: "X-Test: one\nX-Other: two",
    body: "hello from the builder",
    retries: "2",
    retryDelay: "1000",
    timeout: "5",
    labels: "built, console",
    flowControlKey: "fk-built",
    parallelism: "2",
    rate: "5",
    period: "10",
  });
  await env.shot(page, "publish");
  await page.press("[name=destination]", "Enter");
  await page.waitForURL(/#\/messages\/msg_/);
  await eventually(() => expect(rx.requests.length).toBe(1));
  const got = rx.requests[0];
  expect(got?.method).toBe("PUT");
  expect(got?.body).toBe("hello from the builder");
  expect(got?.headers["x-test"]).toBe("one");
  expect(got?.headers["content-type"]).toBe("text/plain");
  const id = decodeURIComponent(page.url().split("/").pop() ?? "");
  const { events } = await api<{ events: { labels?: string[]; maxRetries: number }[] }>(
    `/v2/events?messageId=${id}&state=CREATED`,
  );
  expect(events[0]).toMatchObject({ labels: ["built", "console"], maxRetries: 2 });
  const fc = await api<{ parallelismMax?: number; rateMax?: number }>("/v2/flowControl/fk-built");
  expect(fc).toMatchObject({ flowControlKey: "fk-built" });
});

test("numbers are checked before sending: parallelism abc or 0, a period without a rate", async () => {
  await page.goto(`${env.url}#/publish`);
  await fill({ destination: `${rx.url}/never`, flowControlKey: "k", parallelism: "abc" });
  await page.press("[name=parallelism]", "Enter");
  await page
    .getByText('Parallelism must be a whole number of 1 or more, not "abc".')
    .first()
    .waitFor();
  await fill({ parallelism: "0", period: "5" });
  await page.press("[name=parallelism]", "Enter");
  await page.getByText('not "0"').first().waitFor();
  await page.getByText("A period needs a rate.").waitFor();
  expect(rx.requests.filter((r) => r.url.endsWith("/never"))).toHaveLength(0);
});

interface Schedule {
  cron: string;
  destination: string;
  callback?: string;
  retries: number;
  labels?: string[];
}

test("schedules: create with options, cron in words, a reused id asks, edit keeps the id without asking", async () => {
  await page.goto(`${env.url}#/publish/schedule`);
  await fill({
    destination: `${rx.url}/tick`,
    cron: "*/5 * * * *",
    scheduleId: "built",
    callback: `${rx.url}/cb`,
    retries: "1",
    labels: "nightly",
  });
  await page.getByText("Every 5 minutes (UTC)").waitFor();
  await env.shot(page, "schedule-builder");
  await page.press("[name=cron]", "Enter");
  await page.waitForURL(/#\/schedules\/built$/);
  expect(await api<Schedule>("/v2/schedules/built")).toMatchObject({
    cron: "*/5 * * * *",
    callback: `${rx.url}/cb`,
    retries: 1,
    labels: ["nightly"],
  });

  // A new schedule with the same id asks first, naming the one it replaces.
  await page.goto(`${env.url}#/publish/schedule`);
  await fill({ destination: `${rx.url}/other`, cron: "0 3 * * *", scheduleId: "built" });
  asked.length = 0;
  await page.press("[name=cron]", "Enter");
  await eventually(() =>
    expect(asked).toEqual([`Schedule built exists (*/5 * * * * → ${rx.url}/tick). Replace it?`]),
  );
  await eventually(async () =>
    expect((await api<Schedule>("/v2/schedules/built")).destination).toBe(`${rx.url}/other`),
  );
  // The page moves on to the schedule once saved: wait for it, so that move cannot come after
  // (and undo) the navigation below.
  await page.waitForURL(/#\/schedules\/built$/);

  // Editing it: the form is filled from the schedule, and saving its own id does not ask.
  await page.goto(`${env.url}#/publish/schedule/built`);
  await expect.poll(() => page.inputValue("[name=cron]"), POLL).toBe("0 3 * * *");
  await page.getByText("At 03:00 (UTC)").waitFor();
  await fill({ cron: "0 4 * * *" });
  asked.length = 0;
  await page.press("[name=cron]", "Enter");
  await eventually(async () =>
    expect((await api<Schedule>("/v2/schedules/built")).cron).toBe("0 4 * * *"),
  );
  expect(asked).toEqual([]);
});
