import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import type { TestReceiver } from "../queue/receiver.js";
import { consoleEnv, type ConsoleEnv } from "./harness.js";

/** The queue pages in chromium against a real stashd: each page's main actions, a screenshot each. */
let env: ConsoleEnv;
let page: Page;
let rx: TestReceiver;

beforeAll(async () => {
  env = await consoleEnv();
  rx = await env.q.receiver();
  page = await env.newPage();
});
afterAll(() => env?.close());

const api = async <T>(path: string): Promise<T> => (await env.q.api(path)).json() as Promise<T>;
const button = (name: string) => page.getByRole("button", { name, exact: true });
const toast = (text: string) => page.locator(".toast", { hasText: text }).first().waitFor();

test("login: a wrong token is refused, the queue token opens the console", async () => {
  await page.goto(env.url);
  await page.fill("input[name=token]", "not-the-token");
  await page.click("button[type=submit]");
  await page.locator(".error-line", { hasText: "wrong token" }).waitFor();
  await env.shot(page, "login");
  await env.login(page);
  await page.locator("nav.side a.active", { hasText: "Messages" }).waitFor();
});

test("messages: search by id, open its page with headers and body, cancel", async () => {
  const { messageId } = await env.q.client.publishJSON({
    url: `${rx.url}/later`,
    body: { hello: "console" },
    headers: { "x-demo": "yes" },
    delay: 3600,
  });
  await page.goto(`${env.url}#/messages`);
  await page.fill("input[name='Message id']", messageId);
  await button("Search").click();
  await page.locator("table[aria-label=messages] tbody tr", { hasText: messageId }).click();
  await page.waitForURL(new RegExp(`#/messages/${messageId}$`));
  await page.getByText('{"hello":"console"}').waitFor();
  await expect(page.textContent("main")).resolves.toContain("X-Demo");
  await page.locator(".stat [data-stat=delayed]", { hasText: /^[1-9]/ }).waitFor();
  await env.shot(page, "messages");
  await button("Cancel message").click();
  await toast("Message cancelled");
  expect((await env.q.api(`/v2/messages/${messageId}`)).status).toBe(404);
  await page.getByText("Cancelled: it will not be delivered.").waitFor();
});

async function dlqIds(): Promise<string[]> {
  const r = await api<{ messages: { dlqId: string }[] }>("/v2/dlq");
  return r.messages.map((m) => m.dlqId);
}

test("DLQ: view a failed message, retry one, delete the selected", async () => {
  rx.status = 500;
  rx.responseBody = "receiver says no";
  for (const n of [1, 2]) {
    await env.q.client.publishJSON({ url: `${rx.url}/fail`, body: { n }, retries: 0 });
  }
  await eventually(async () => expect(await dlqIds()).toHaveLength(2));
  rx.status = 200;
  await page.goto(`${env.url}#/dlq`);
  const rows = page.locator("table[aria-label=dlq] tbody tr");
  await rows.nth(1).waitFor();
  await rows.first().locator("td").nth(1).click(); // "Failed at" (not the Copy button)
  const panel = page.locator("aside.panel");
  await panel.getByText("receiver says no").waitFor();
  await env.shot(page, "dlq");
  const before = rx.requests.length;
  await panel.getByRole("button", { name: "Retry", exact: true }).click();
  await page.locator("[data-outcome=retried]", { hasText: "published again as message" }).waitFor();
  await eventually(async () => expect(await dlqIds()).toHaveLength(1));
  await eventually(() => expect(rx.requests.length).toBe(before + 1));
  await rows.nth(1).waitFor({ state: "detached" });
  await rows.first().locator("input[type=checkbox]").check();
  await button("Delete selected (1)").click();
  await toast("Deleted");
  await eventually(async () => expect(await dlqIds()).toHaveLength(0));
  await page.getByText("The DLQ is empty.").waitFor();
});

test("logs: events of every message, newest first", async () => {
  await page.goto(`${env.url}#/logs`);
  const table = page.locator("table[aria-label=events]");
  await table.getByText("DELIVERED").first().waitFor();
  await table.getByText("FAILED").first().waitFor();
  await table.locator("tbody tr").first().click();
  await page.locator("aside.panel pre", { hasText: "messageId" }).waitFor();
  await env.shot(page, "logs");
});

interface Schedule {
  scheduleId: string;
  isPaused: boolean;
}

test("schedules: create, pause, resume, delete", async () => {
  await page.goto(`${env.url}#/schedules`);
  await page.fill("input[name=destination]", `${rx.url}/tick`);
  await page.fill("input[name=cron]", "*/5 * * * *");
  await page.fill("input[name=body]", "tick");
  await page.fill("input[name=scheduleId]", "console-schedule");
  await button("Create schedule").click();
  const row = page.locator("table[aria-label=schedules] tbody tr", { hasText: "console-schedule" });
  await row.waitFor();
  await row.getByRole("button", { name: "Pause" }).click();
  await row.getByText("PAUSED").waitFor();
  expect((await api<Schedule>("/v2/schedules/console-schedule")).isPaused).toBe(true);
  await row.getByRole("button", { name: "Resume" }).click();
  await row.getByText("ACTIVE").waitFor();
  expect((await api<Schedule>("/v2/schedules/console-schedule")).isPaused).toBe(false);
  await env.shot(page, "schedules");
  await row.getByRole("button", { name: "Delete" }).click();
  await page.getByText("No schedules yet.").waitFor();
  expect(await api<Schedule[]>("/v2/schedules")).toEqual([]);
});

test("queues: create, pause, resume, delete", async () => {
  await page.goto(`${env.url}#/queues`);
  await page.fill("input[name=queueName]", "orders");
  await page.fill("input[name=parallelism]", "3");
  await button("Create / update").click();
  const row = page.locator("table[aria-label=queues] tbody tr", { hasText: "orders" });
  await row.getByText("ACTIVE").waitFor();
  await expect(row.textContent()).resolves.toContain("3");
  await row.getByRole("button", { name: "Pause" }).click();
  await row.getByText("PAUSED").waitFor();
  expect((await api<{ paused: boolean }>("/v2/queues/orders")).paused).toBe(true);
  await row.getByRole("button", { name: "Resume" }).click();
  await row.getByText("ACTIVE").waitFor();
  await env.shot(page, "queues");
  await row.getByRole("button", { name: "Delete" }).click();
  await page.getByText("No queues yet.").waitFor();
  expect(await api<unknown[]>("/v2/queues")).toEqual([]);
});

test("URL groups: add endpoints, remove one, delete the group", async () => {
  await page.goto(`${env.url}#/url-groups`);
  for (const name of ["a", "b"]) {
    await page.fill("input[name=group]", "fanout");
    await page.fill("input[name=endpointName]", name);
    await page.fill("input[name=endpointUrl]", `${rx.url}/${name}`);
    await button("Add endpoint").click();
    await page.getByText(`${name}: ${rx.url}/${name}`).waitFor();
  }
  await env.shot(page, "url-groups");
  const endpoint = page.locator(".endpoints li", { hasText: `${rx.url}/a` });
  await endpoint.getByRole("button", { name: "Remove" }).click();
  await endpoint.waitFor({ state: "detached" });
  const group = await api<{ endpoints: { url: string }[] }>("/v2/topics/fanout");
  expect(group.endpoints.map((e) => e.url)).toEqual([`${rx.url}/b`]);
  await button("Delete group").click();
  await page.getByText("No URL groups yet.").waitFor();
});

test("flow control: a key's usage, pause and resume", async () => {
  await env.q.client.publishJSON({
    url: `${rx.url}/fc`,
    body: {},
    delay: 3600,
    flowControl: { key: "fc-console", parallelism: 2 },
  });
  await page.goto(`${env.url}#/flow-control`);
  const row = page.locator("table[aria-label='flow control keys'] tbody tr", {
    hasText: "fc-console",
  });
  await row.waitFor();
  await row.getByRole("button", { name: "Pause" }).click();
  await row.getByText("PAUSED").waitFor();
  expect((await api<{ isPaused: boolean }>("/v2/flowControl/fc-console")).isPaused).toBe(true);
  await env.shot(page, "flow-control");
  await row.getByRole("button", { name: "Resume" }).click();
  await row.getByText("ACTIVE").waitFor();
  expect((await api<{ isPaused: boolean }>("/v2/flowControl/fc-console")).isPaused).toBe(false);
});

test("signing keys: shown on request, rotated", async () => {
  const before = await api<{ current: string; next: string }>("/v2/keys");
  await page.goto(`${env.url}#/signing-keys`);
  await expect(page.locator("[data-key=current]").textContent()).resolves.not.toBe(before.current);
  await button("Show").click();
  await page.locator("[data-key=current]", { hasText: before.current }).waitFor();
  await env.shot(page, "signing-keys");
  await button("Rotate").click();
  await page.locator("[data-key=current]", { hasText: before.next }).waitFor();
  expect((await api<{ current: string }>("/v2/keys")).current).toBe(before.next);
});
