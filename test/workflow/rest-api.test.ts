import { serve } from "@upstash/workflow";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { workflowEnv, type WorkflowTestEnv } from "./harness.js";

/**
 * Upstash's workflow REST endpoints that no SDK sends (docs/workflow.md §16), called with plain
 * HTTP as the vendor documents them, against runs of the SDK's own `serve`.
 */

let w: WorkflowTestEnv;

beforeAll(async () => {
  w = await workflowEnv();
});
afterAll(async () => {
  await w?.close();
});

type Json = Record<string, unknown>;

const json = async (res: Response): Promise<unknown> => {
  const text = await res.text();
  expect(res.status, text).toBeLessThan(300);
  return JSON.parse(text) as unknown;
};

async function runOf(workflowRunId: string, state: string): Promise<Json> {
  return eventually(
    async () => {
      const { runs } = await w.client.logs({ workflowRunId });
      expect(runs[0]?.workflowState).toBe(state);
      return runs[0] as unknown as Json;
    },
    { timeoutMs: 10_000 },
  );
}

/** A workflow that waits for `evt-<payload>` (so its run stays active) after one step. */
function waiting(path: string, ran: string[]) {
  return w.app.route(
    path,
    serve<string>(
      async (context) => {
        await context.run("note", () => ran.push(context.requestPayload));
        await context.waitForEvent("wait", `evt-${context.requestPayload}`, { timeout: "1h" });
      },
      { env: w.env },
    ).handler,
  );
}

describe("POST /v2/batch/trigger", () => {
  it("starts every item's run and reports an active run id as deduplicated", async () => {
    const ran: string[] = [];
    const url = waiting("/batch-trigger", ran);
    const items = [
      { destination: url, body: "one", headers: { "Upstash-Workflow-RunId": "bt-one" } },
      { destination: url, body: "two", headers: { "Upstash-Label": "batch" } },
    ];
    const started = (await json(
      await w.api("/v2/batch/trigger", { method: "POST", body: JSON.stringify(items) }),
    )) as Json[];
    expect(started).toHaveLength(2);
    expect(started[0]).toMatchObject({ workflowRunId: "wfr_bt-one", deduplicated: false });
    expect(started[1]?.["workflowRunId"]).toMatch(/^wfr_/);
    await eventually(() => expect(ran.sort()).toEqual(["one", "two"]));
    const second = await runOf(String(started[1]?.["workflowRunId"]), "RUN_STARTED");
    expect(second["labels"]).toEqual(["batch"]);

    const again = (await json(
      await w.api("/v2/batch/trigger", { method: "POST", body: JSON.stringify([items[0]]) }),
    )) as Json[];
    expect(again[0]).toMatchObject({
      workflowRunId: "wfr_bt-one",
      workflowCreatedAt: started[0]?.["workflowCreatedAt"],
      deduplicated: true,
    });
    await w.client.cancel({ all: true });
  });

  it("refuses a body that is not a non-empty array and a URL-group destination", async () => {
    for (const body of ["{}", "[]", "nope"]) {
      const res = await w.api("/v2/batch/trigger", { method: "POST", body });
      expect(res.status).toBe(400);
      expect(await res.json()).toHaveProperty("error");
    }
    const group = JSON.stringify([{ destination: "my-group" }]);
    expect((await w.api("/v2/batch/trigger", { method: "POST", body: group })).status).toBe(400);
  });
});

describe("GET /v2/workflows/logs", () => {
  it("answers the runs as /v2/workflows/events does, with or without groupBy", async () => {
    const ran: string[] = [];
    const url = waiting("/logs-alias", ran);
    const { workflowRunId } = await w.client.trigger({ url, body: "alias" });
    await runOf(workflowRunId, "RUN_STARTED");
    for (const query of ["", "&groupBy=workflowRunId"]) {
      const page = (await json(
        await w.api(`/v2/workflows/logs?workflowRunId=${workflowRunId}${query}`),
      )) as { runs: Json[] };
      expect(page.runs).toHaveLength(1);
      expect(page.runs[0]).toMatchObject({ workflowRunId, workflowUrl: url });
    }
    await w.client.cancel({ ids: workflowRunId });
  });
});

/** A workflow whose step fails while `state.broken`; it records the label it runs under. */
function flaky(path: string, state: { broken: boolean; labels: string[]; at: number[] }) {
  return w.app.route(
    path,
    serve(
      async (context) => {
        await context.run("first", () => 1);
        await context.run("flaky", () => {
          state.labels.push(context.label ?? "");
          state.at.push(Date.now());
          if (state.broken) throw new Error("still broken");
        });
      },
      { env: w.env },
    ).handler,
  );
}

async function dlqIdOf(workflowRunId: string): Promise<string> {
  return eventually(async () => {
    const { messages } = await w.client.dlq.list({ filter: { workflowRunId } });
    expect(messages).toHaveLength(1);
    return messages[0]?.dlqId ?? "";
  });
}

describe("DLQ resume with Upstash-Delay, -Retry-Delay, -Label and -Failure-Callback", () => {
  it("applies each header to the resumed run", async () => {
    const state = { broken: true, labels: [] as string[], at: [] as number[] };
    const url = flaky("/resume-headers", state);
    const failures: string[] = [];
    const failureUrl = w.app.route("/resume-headers-failed", async (req) => {
      failures.push(await req.text());
      return new Response("ok");
    });
    const { workflowRunId } = await w.client.trigger({ url, retries: 0, label: "before" });
    const dlqId = await dlqIdOf(workflowRunId);
    const resumedAt = Date.now();
    const res = await w.api(`/v2/workflows/dlq/resume/${dlqId}`, {
      method: "POST",
      headers: {
        "Upstash-Delay": "1s",
        "Upstash-Retry-Delay": "1000 * retried",
        "Upstash-Label": "after",
        "Upstash-Failure-Callback": failureUrl,
        "Upstash-Retries": "0",
      },
    });
    expect(await json(res)).toMatchObject({ workflowRunId });
    const run = await runOf(workflowRunId, "RUN_FAILED");
    expect(state.labels).toEqual(["before", "after"]);
    expect(state.at[1]).toBeGreaterThanOrEqual(resumedAt + 900);
    expect(run["labels"]).toEqual(["after"]);
    const next = (run["steps"] as { steps: Json[] }[]).at(-1)?.steps[0];
    expect(next).toMatchObject({ state: "STEP_FAILED", retryDelay: "1000 * retried" });
    await eventually(() => expect(failures).toHaveLength(1));
    expect(JSON.parse(failures[0] ?? "{}")).toMatchObject({ workflowRunId, status: 500 });
  });

  it("refuses a bad header value with 400 and changes nothing", async () => {
    const state = { broken: true, labels: [] as string[], at: [] as number[] };
    const url = flaky("/resume-bad", state);
    const { workflowRunId } = await w.client.trigger({ url, retries: 0 });
    const dlqId = await dlqIdOf(workflowRunId);
    for (const headers of [{ "Upstash-Delay": "soon" }, { "Upstash-Failure-Callback": "ftp:/x" }]) {
      const res = await w.api(`/v2/workflows/dlq/restart/${dlqId}`, { method: "POST", headers });
      expect(res.status).toBe(400);
    }
    expect(await dlqIdOf(workflowRunId)).toBe(dlqId);
  });
});

describe("DELETE /v2/workflows/dlq/callback/{dlqId}", () => {
  it("cancels a failure callback in progress; 400 when none is", async () => {
    let callbackCalls = 0;
    const failing = w.app.route("/cb-failing", async () => {
      callbackCalls++;
      return new Response("down", { status: 503 });
    });
    const state = { broken: true, labels: [] as string[], at: [] as number[] };
    const url = flaky("/cb-cancel", state);
    const res = await w.api(`/v2/trigger/${url}`, {
      method: "POST",
      headers: {
        "Upstash-Retries": "0",
        "Upstash-Failure-Callback": failing,
        "Upstash-Failure-Callback-Retries": "3",
        "Upstash-Failure-Callback-Retry-Delay": "600000",
      },
    });
    const { workflowRunId } = (await json(res)) as { workflowRunId: string };
    const dlqId = await dlqIdOf(workflowRunId);
    await eventually(() => expect(callbackCalls).toBe(1));
    const waiting = await runOf(workflowRunId, "RUN_FAILED");
    const f = waiting["failureFunction"] as Json;
    expect(f["state"]).toBe("CALLBACK_INPROGRESS");
    expect(f["nextDeliveryTime"]).toBeGreaterThan(Date.now() + 500_000);

    const cancel = await w.api(`/v2/workflows/dlq/callback/${dlqId}`, { method: "DELETE" });
    expect(await json(cancel)).toMatchObject({ workflowRunId });
    const canceled = await runOf(workflowRunId, "RUN_FAILED");
    expect((canceled["failureFunction"] as Json)["state"]).toBe("CALLBACK_CANCELED");
    const { messages } = await w.client.dlq.list({
      filter: { workflowRunId, failureFunctionState: "CALLBACK_CANCELED" },
    });
    expect(messages).toHaveLength(1);

    const again = await w.api(`/v2/workflows/dlq/callback/${dlqId}`, { method: "DELETE" });
    expect(again.status).toBe(400);
    const unknown = await w.api(`/v2/workflows/dlq/callback/123-0`, { method: "DELETE" });
    expect(unknown.status).toBe(404);
    expect(callbackCalls).toBe(1);
  });
});
