import { Client, serve } from "@upstash/workflow";
import { afterAll, beforeAll, expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import { startApp, type App } from "../workflow/harness.js";
import { consoleCookie, consoleEnv, type ConsoleEnv } from "./harness.js";

/**
 * The console's DLQ count is the message DLQ's (what GET /v2/dlq lists), the workflow DLQ's is
 * apart (GET /v2/workflows/dlq): both come from lua/depth.lua over the dlq and dlq-wf indexes,
 * kept by the scripts that add and remove entries, so they match the lists after concurrent
 * failures, deletes and retries (also run with 3 partitions: vitest.config.ts).
 */
let env: ConsoleEnv;
let app: App;
let cookie: string;

beforeAll(async () => {
  env = await consoleEnv({ browser: false });
  app = await startApp();
  cookie = await consoleCookie(env);
});
afterAll(async () => {
  await app?.close();
  await env?.close();
});

interface Counts {
  dlq: number;
  workflowDlq: number;
}

async function summary(): Promise<Counts> {
  const res = await fetch(`${env.url}/api/summary`, { headers: { cookie } });
  return ((await res.json()) as { queue: Counts }).queue;
}

async function listed(path: string): Promise<string[]> {
  const res = await env.q.api(`${path}?count=100`);
  return ((await res.json()) as { messages: { dlqId: string }[] }).messages.map((m) => m.dlqId);
}

async function listedCounts(): Promise<Counts> {
  const [dlq, workflowDlq] = await Promise.all([listed("/v2/dlq"), listed("/v2/workflows/dlq")]);
  return { dlq: dlq.length, workflowDlq: workflowDlq.length };
}

test("the DLQ count matches the DLQ list; workflow entries are counted apart", async () => {
  const q = env.q.stashd.queue;
  const url = app.route(
    "/fails",
    serve(
      async (context) => {
        await context.run("boom", () => {
          throw new Error("always");
        });
      },
      {
        env: {
          QSTASH_URL: q.url,
          QSTASH_TOKEN: q.token,
          QSTASH_CURRENT_SIGNING_KEY: q.currentSigningKey,
          QSTASH_NEXT_SIGNING_KEY: q.nextSigningKey,
        },
      },
    ).handler,
  );
  const client = new Client({ baseUrl: q.url, token: q.token });
  const dead = `${app.url}/no-route`; // the app answers 404: failed for good with retries 0
  await Promise.all([
    ...Array.from({ length: 12 }, (_, n) =>
      env.q.client.publishJSON({ url: dead, body: { n }, retries: 0 }),
    ),
    ...Array.from({ length: 3 }, () => client.trigger({ url, retries: 0 })),
  ]);
  await eventually(async () => expect(await listedCounts()).toEqual({ dlq: 12, workflowDlq: 3 }));
  expect(await summary()).toEqual(expect.objectContaining({ dlq: 12, workflowDlq: 3 }));

  // Concurrent deletes and retries of both kinds: the counts follow the lists.
  const messages = await listed("/v2/dlq");
  const runs = await listed("/v2/workflows/dlq");
  await Promise.all([
    ...messages.slice(0, 4).map((id) => env.q.api(`/v2/dlq/${id}`, { method: "DELETE" })),
    env.q.api(`/v2/dlq/retry/${messages[4] ?? ""}`, { method: "POST" }),
    env.q.api(`/v2/workflows/dlq/${runs[0] ?? ""}`, { method: "DELETE" }),
  ]);
  await eventually(async () => {
    const now = await listedCounts();
    expect(now.workflowDlq).toBe(2);
    expect(await summary()).toEqual(expect.objectContaining(now));
  });
});
