import { serve } from "@upstash/workflow";
import { afterAll, beforeAll, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { workflowEnv, type WorkflowTestEnv } from "../workflow/harness.js";

/**
 * `GET /v2/workflows/logs` with a filter matching nothing used to read every run in one request;
 * a page now examines at most STASHD_QUEUE_PAGE_MAX_SCANNED runs and ends with a cursor (the
 * page may be empty), and following the cursors still finds every match. A run's log carries its
 * step bodies, so a page also ends once its logs pass STASHD_QUEUE_PAGE_MAX_BYTES.
 */
const MAX_SCANNED = 20;
const MAX_BYTES = 200_000;
let w: WorkflowTestEnv;
beforeAll(async () => {
  w = await workflowEnv({ queuePageMaxScanned: MAX_SCANNED, queuePageMaxBytes: MAX_BYTES });
});
afterAll(async () => {
  await w?.close();
});

type Page = { runs: { workflowRunId: string }[]; cursor?: string };

async function allPages(query: string): Promise<{ pages: number; runs: string[] }> {
  const runs: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const res = await w.api(`/v2/workflows/logs?${query}${cursor ? `&cursor=${cursor}` : ""}`);
    expect(res.status).toBe(200);
    const page = (await res.json()) as Page;
    runs.push(...page.runs.map((r) => r.workflowRunId));
    cursor = page.cursor;
    pages++;
  } while (cursor !== undefined);
  return { pages, runs };
}

it("a run listing filtered to nothing pages with cursors; every run is still found", async () => {
  const url = w.app.route(
    "/one-step",
    serve(
      async (context) => {
        await context.run("only", () => "done");
      },
      { env: w.env },
    ).handler,
  );
  const n = 3 * MAX_SCANNED;
  const items = Array.from({ length: n }, (_, i) => ({ destination: url, body: String(i) }));
  const res = await w.api("/v2/batch/trigger", { method: "POST", body: JSON.stringify(items) });
  expect(res.status).toBeLessThan(300);
  const started = ((await res.json()) as { workflowRunId: string }[]).map((s) => s.workflowRunId);
  await eventually(
    async () =>
      expect((await allPages(`count=100&workflowUrl=${url}`)).runs.sort()).toEqual(started.sort()),
    { timeoutMs: 20_000 },
  );
  const first = (await (
    await w.api("/v2/workflows/logs?count=100&workflowUrl=http://nope")
  ).json()) as Page;
  expect(first.runs).toEqual([]);
  expect(first.cursor).toBeDefined();
  const none = await allPages("count=100&workflowUrl=http://nope");
  expect(none.runs).toEqual([]);
  expect(none.pages).toBeGreaterThanOrEqual(n / MAX_SCANNED);
});

it("a page of run logs ends once its step bodies pass the byte bound; cursors find every run", async () => {
  const url = w.app.route(
    "/big-step",
    serve(
      async (context) => {
        await context.run("big", () => "x".repeat(120_000));
      },
      { env: w.env },
    ).handler,
  );
  const items = Array.from({ length: 4 }, (_, i) => ({ destination: url, body: String(i) }));
  const res = await w.api("/v2/batch/trigger", { method: "POST", body: JSON.stringify(items) });
  expect(res.status).toBeLessThan(300);
  const started = ((await res.json()) as { workflowRunId: string }[]).map((s) => s.workflowRunId);
  const query = `count=100&workflowUrl=${url}&state=RUN_SUCCESS`;
  await eventually(
    async () => expect((await allPages(query)).runs.sort()).toEqual(started.sort()),
    {
      timeoutMs: 20_000,
    },
  );
  const first = await w.api(`/v2/workflows/logs?${query}`);
  const text = await first.text();
  const page = JSON.parse(text) as Page;
  expect(page.runs.length).toBeLessThan(4);
  expect(page.cursor).toBeDefined();
  expect(Buffer.byteLength(text)).toBeLessThan(MAX_BYTES + 150_000);
});
