import assert from "node:assert/strict";
import { serve } from "@upstash/workflow";
import { credentialsOf } from "../../src/kv/databases/database-manager.js";
import { createDatabase } from "../../src/kv/databases/registry.js";
import { eventually } from "../harness/eventually.js";
import type { TestReceiver } from "../queue/receiver.js";
import type { App } from "../workflow/harness.js";
import type { ConsoleEnv } from "./harness.js";
import { redisOn } from "./kv-helpers.js";
import { workflowClientOf, workflowEnvOf } from "./workflow-helpers.js";

/**
 * The seeded data every console page is shown and timed on: the tour of docs/console.md
 * (test/console/tour-pages.test.ts) and `npm run bench:console` (bench/console.ts), at sizes given
 * by a `SeedShape`. Plain `node:assert` (no vitest), so the bench can run it outside a test.
 */
export interface SeedShape {
  /** Messages delivered at once (batches of 100 to `/orders/<n>`). */
  delivered: number;
  /** Messages delayed by an hour (batches of 100, labelled "web" / "nightly"). */
  delayed: number;
  /** Messages answered 503 with no retries: each becomes a DLQ entry. */
  failed: number;
  /** Publishes of each other kind, taken in turn: callbacks, URL group, FIFO queue, flow control, delays. */
  assorted: number;
  /** Workflow runs left sleeping for a day, and runs failed into the workflow DLQ. */
  sleepingRuns: number;
  failedRuns: number;
  /** Keys of every type (strings, hashes, sets, lists, sorted sets, a stream); about this many. */
  keys: number;
  /** Keys with names a browser must keep inert and URL-encode (spaces, `/`, `?`, markup, non-ASCII). */
  oddNames: boolean;
  /** A second KV database ("cache") with a few keys, besides "default". */
  secondDatabase: boolean;
}

/** The tour's seed (docs/console.md, Tour). */
export const TOUR_SEED: SeedShape = {
  delivered: 0,
  delayed: 1200,
  failed: 60,
  assorted: 0,
  sleepingRuns: 1,
  failedRuns: 1,
  keys: 3500,
  oddNames: false,
  secondDatabase: false,
};

/**
 * Issue 26's seed: 59 assorted publishes (callbacks, delays, a URL group, a FIFO queue, flow
 * control), 3,300 more with 323 in the DLQ, 5 schedules, 7 workflow runs, 3,500 keys of every
 * type with odd names, two databases.
 */
export const ISSUE_SEED: SeedShape = {
  delivered: 1977,
  delayed: 1000,
  failed: 323,
  assorted: 59,
  sleepingRuns: 5,
  failedRuns: 2,
  keys: 3500,
  oddNames: true,
  secondDatabase: true,
};

/** The ids the pages of a seeded console open (a message, a DLQ entry, a schedule, a run). */
export interface SeedIds {
  message: string;
  dlq: string;
  schedule: string;
  run: string;
}

/** A key holding 10,000 fields (the "a key of 10,000 elements opens ≤ 500 ms" target). */
export const BIG_KEY = "user:42:profile";

/** Seeds the queue, workflow runs and keys of `shape`; `rx` answers deliveries, `app` hosts runs. */
export async function seedConsole(
  env: ConsoleEnv,
  rx: TestReceiver,
  app: App,
  shape: SeedShape,
): Promise<SeedIds> {
  const message = await seedMessages(env, rx, shape);
  const dlq = await seedFailures(env, shape.failed);
  await seedSchedules(env, rx);
  await seedAssorted(env, rx, shape.assorted);
  const run = await seedWorkflows(env, app, shape);
  await seedKeys(env, shape);
  if (shape.secondDatabase) await seedSecondDatabase(env);
  return { message, dlq, schedule: "report-1", run };
}

/** Delayed and delivered messages; answers the first delayed message's id. */
async function seedMessages(env: ConsoleEnv, rx: TestReceiver, shape: SeedShape): Promise<string> {
  const c = env.q.client;
  let first = "";
  for (let start = 0; start < shape.delayed; start += 100) {
    const n = Math.min(100, shape.delayed - start);
    const messages = Array.from({ length: n }, (_, i) => ({
      url: `${rx.url}/orders/${start + i}`,
      body: { order: start + i, items: ["book", "pen"] },
      delay: 3600,
      label: (start / 100) % 2 ? "nightly" : "web",
    }));
    const [one] = (await c.batchJSON(messages)) as { messageId: string }[];
    first ||= one?.messageId ?? "";
  }
  for (let start = 0; start < shape.delivered; start += 100) {
    const n = Math.min(100, shape.delivered - start);
    await c.batchJSON(
      Array.from({ length: n }, (_, i) => ({
        url: `${rx.url}/shipped/${start + i}`,
        body: { shipped: start + i },
        label: "shipped",
      })),
    );
  }
  await eventually(
    () => {
      const got = rx.requests.filter((r) => r.url.includes("/shipped/")).length;
      assert.ok(got >= shape.delivered, `${got} of ${shape.delivered} delivered`);
    },
    { timeoutMs: 120_000, intervalMs: 100 },
  );
  return first;
}

/** `count` messages failing into the DLQ (a receiver answering 503); answers the newest entry. */
async function seedFailures(env: ConsoleEnv, count: number): Promise<string> {
  const failing = await env.q.receiver();
  failing.status = 503;
  failing.responseBody = '{"error":"inventory service unavailable"}';
  for (let start = 0; start < count; start += 100) {
    const n = Math.min(100, count - start);
    await env.q.client.batchJSON(
      Array.from({ length: n }, (_, i) => ({
        url: `${failing.url}/inventory/${start + i}`,
        body: { sku: start + i },
        retries: 0,
      })),
    );
  }
  return eventually(
    async () => {
      const ids = await dlqIds(env);
      assert.equal(ids.length, count);
      return ids[0] ?? "";
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );
}

/** Every DLQ entry's id, newest first (paging the API 100 at a time). */
async function dlqIds(env: ConsoleEnv): Promise<string[]> {
  const ids: string[] = [];
  let cursor = "";
  do {
    const res = await env.q.api(`/v2/dlq?count=100${cursor ? `&cursor=${cursor}` : ""}`);
    const page = (await res.json()) as { messages: { dlqId: string }[]; cursor?: string };
    ids.push(...page.messages.map((m) => m.dlqId));
    cursor = page.cursor ?? "";
  } while (cursor);
  return ids;
}

/** Five schedules (report-0 … report-4), a FIFO queue "emails" and a URL group "webhooks". */
async function seedSchedules(env: ConsoleEnv, rx: TestReceiver): Promise<void> {
  const c = env.q.client;
  const crons = ["*/5 * * * *", "0 3 * * *", "0 9 * * 1", "30 * * * *", "0 0 1 * *"];
  for (const [n, cron] of crons.entries()) {
    await c.schedules.create({
      destination: `${rx.url}/report/${n}`,
      cron,
      scheduleId: `report-${n}`,
    });
  }
  await c.queue({ queueName: "emails" }).upsert({ parallelism: 2 });
  await c
    .queue({ queueName: "emails" })
    .enqueueJSON({ url: `${rx.url}/mail`, body: {}, delay: 3600 });
  await c.urlGroups.addEndpoints({
    name: "webhooks",
    endpoints: [{ url: `${rx.url}/hook/a` }, { url: `${rx.url}/hook/b` }],
  });
  await c.publishJSON({
    url: `${rx.url}/limited`,
    body: {},
    delay: 3600,
    flowControl: { key: "partner-api", parallelism: 2, rate: 10 },
  });
}

/** `count` publishes, one kind after the other: callbacks, URL group, FIFO, flow control, delay. */
async function seedAssorted(env: ConsoleEnv, rx: TestReceiver, count: number): Promise<void> {
  const c = env.q.client;
  const kinds = [
    (i: number) =>
      c.publishJSON({
        url: `${rx.url}/paid/${i}`,
        body: { i },
        callback: `${rx.url}/callback`,
        failureCallback: `${rx.url}/failure-callback`,
        label: "callbacks",
      }),
    (i: number) => c.publishJSON({ urlGroup: "webhooks", body: { event: i }, delay: 3600 }),
    (i: number) =>
      c.queue({ queueName: "emails" }).enqueueJSON({ url: `${rx.url}/mail/${i}`, body: { i } }),
    (i: number) =>
      c.publishJSON({
        url: `${rx.url}/limited/${i}`,
        body: { i },
        delay: 3600,
        flowControl: { key: "partner-api", parallelism: 2, rate: 10 },
      }),
    (i: number) => c.publishJSON({ url: `${rx.url}/later/${i}`, body: { i }, delay: 60 * (i + 1) }),
  ];
  for (let i = 0; i < count; i++) await kinds[i % kinds.length]?.(i);
}

/** Sleeping and failed workflow runs; answers the first sleeping run's id. */
async function seedWorkflows(env: ConsoleEnv, app: App, shape: SeedShape): Promise<string> {
  const wfEnv = workflowEnvOf(env);
  const signup = app.route(
    "/signup",
    serve<{ user: string }>(
      async (context) => {
        const user = await context.run("create-user", () => ({
          id: 42,
          ...context.requestPayload,
        }));
        await context.run("send-welcome", () => `welcome mail sent to ${user.user}`);
        await context.sleep("wait-a-day", 86_400);
        await context.run("follow-up", () => "sent");
      },
      { env: wfEnv },
    ).handler,
  );
  const billing = app.route(
    "/billing",
    serve(
      async (context) => {
        await context.run("load-invoice", () => ({ invoice: "INV-7", amount: 1200 }));
        await context.run("charge-card", () => {
          throw new Error("card declined: insufficient funds");
        });
      },
      { env: wfEnv },
    ).handler,
  );
  const client = workflowClientOf(env);
  const sleeping: string[] = [];
  for (let i = 0; i < shape.sleepingRuns; i++) {
    const users = ["ada", "grace", "linus", "barbara", "ken"];
    const run = await client.trigger({
      url: signup,
      body: { user: users[i % 5] },
      label: "signup",
    });
    sleeping.push(run.workflowRunId);
  }
  for (let i = 0; i < shape.failedRuns; i++) {
    await client.trigger({ url: billing, retries: 0, label: "billing" });
  }
  await eventually(
    async () => {
      const r = (await (await env.q.api("/v2/workflows/dlq")).json()) as { messages: unknown[] };
      assert.equal(r.messages.length, shape.failedRuns);
      for (const id of sleeping) assert.ok(await isSleeping(env, id), `${id} is not asleep yet`);
    },
    { timeoutMs: 30_000, intervalMs: 50 },
  );
  return sleeping[0] ?? "";
}

/** Whether run `id`'s log has reached its "wait-a-day" sleep. */
async function isSleeping(env: ConsoleEnv, id: string): Promise<boolean> {
  const log = (await (await env.q.api(`/v2/workflows/events?workflowRunId=${id}`)).json()) as {
    runs: { steps: { steps: { stepName?: string }[] }[] }[];
  };
  const names = log.runs[0]?.steps.flatMap((g) => g.steps.map((s) => s.stepName)) ?? [];
  return names.includes("wait-a-day");
}

/** Names that must stay inert text and survive URL-encoding in the KV browser. */
const ODD_NAMES = [
  "key with spaces",
  "files/2026/report.pdf",
  "what?really=yes&no",
  "<img src=x onerror=alert(1)>",
  "ключ:кириллица",
  "東京:天気",
  "emoji:🙂",
  "percent%2Fencoded",
  'quote"and\\backslash',
  "#hash:in:name",
];

/**
 * About `shape.keys` keys: 4/7 strings `user:<n>:name`, 2/7 `session:<n>`, then hashes, sets,
 * lists and sorted sets (the rest split 200/100/100/rest), a stream, the odd names, and the
 * 10,000-field hash BIG_KEY and `user:42:city` = "München".
 */
async function seedKeys(env: ConsoleEnv, shape: SeedShape): Promise<void> {
  const pairs = (n: number, f: (i: number) => [string, string]) =>
    Array.from({ length: n }, (_, i) => f(i)).flat();
  const users = Math.round((shape.keys * 4) / 7);
  const sessions = Math.round((shape.keys * 2) / 7);
  const rest = Math.max(0, shape.keys - users - sessions);
  const hashes = Math.round((rest * 2) / 5);
  const sets = Math.round(rest / 5);
  const lists = Math.round(rest / 5);
  const zsets = Math.max(0, rest - hashes - sets - lists - 3);
  if (users) await redisOn(env, "MSET", ...pairs(users, (i) => [`user:${i}:name`, `User ${i}`]));
  if (sessions) await redisOn(env, "MSET", ...pairs(sessions, (i) => [`session:${i}`, `t-${i}`]));
  const commands: string[][] = [];
  for (let i = 0; i < hashes; i++) commands.push(["HSET", `order:${i}`, "status", "paid"]);
  for (let i = 0; i < sets; i++) commands.push(["SADD", `tags:${i}`, "a", "b", "c"]);
  for (let i = 0; i < lists; i++) commands.push(["RPUSH", `queue:jobs:${i}`, "j1", "j2"]);
  for (let i = 0; i < zsets; i++) commands.push(["ZADD", `leaderboard:${i}`, "1", "ada"]);
  commands.push(["XADD", "events:audit", "*", "action", "login", "user", "ada"]);
  if (shape.oddNames)
    for (const name of ODD_NAMES) commands.push(["SET", name, `value of ${name}`]);
  await pipeline(env, commands);
  await redisOn(env, "HSET", BIG_KEY, ...pairs(10_000, (i) => [`field-${i}`, `value ${i}`]));
  await redisOn(env, "SET", "user:42:city", "München");
}

/** Runs `commands` on the default database through the REST pipeline, 500 at a time. */
async function pipeline(env: ConsoleEnv, commands: string[][]): Promise<void> {
  for (let i = 0; i < commands.length; i += 500) {
    const res = await env.q.stashd.kvFetch("/pipeline", {
      body: JSON.stringify(commands.slice(i, i + 500)),
    });
    assert.equal(res.status, 200, await res.text());
  }
}

/** A second database, "cache", with a few keys of its own (a managed redis-server of its own). */
async function seedSecondDatabase(env: ConsoleEnv): Promise<void> {
  const record = createDatabase(env.q.stashd.dataDir, "cache");
  const { token } = credentialsOf(record);
  const body = JSON.stringify(["MSET", "page:/:html", "<h1>home</h1>", "page:/about:html", "x"]);
  await eventually(
    async () => {
      const res = await env.q.stashd.kvFetch("/", { body, token });
      assert.equal(res.status, 200);
    },
    { timeoutMs: 30_000, intervalMs: 50 },
  );
}
