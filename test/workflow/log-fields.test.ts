import { serve, WorkflowNonRetryableError, type WorkflowContext } from "@upstash/workflow";
import { createWorkflow, serveMany } from "@upstash/workflow/cloudflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { workflowEnv, type WorkflowTestEnv } from "./harness.js";

/**
 * The run-log and workflow-DLQ fields of `@upstash/workflow` 1.3's types (docs/workflow.md §12),
 * read through the SDK's own Client against runs of its own `serve`.
 */

let w: WorkflowTestEnv;

beforeAll(async () => {
  w = await workflowEnv();
});
afterAll(async () => {
  await w?.close();
});

type Json = Record<string, unknown>;

async function runLog(workflowRunId: string, check: (run: Json) => void): Promise<Json> {
  return eventually(
    async () => {
      const { runs } = await w.client.logs({ workflowRunId });
      const run = runs[0] as unknown as Json;
      expect(run).toBeDefined();
      check(run);
      return run;
    },
    { timeoutMs: 10_000 },
  );
}

const stepsOf = (run: Json): Json[] =>
  (run["steps"] as { steps: Json[] }[]).flatMap((g) => g.steps);

/** A workflow whose step "flaky" throws while `broken` is true. */
function flaky(path: string, state: { broken: boolean }) {
  return w.app.route(
    path,
    serve(
      async (context) => {
        await context.run("first", () => 1);
        await context.run("flaky", () => {
          if (state.broken) throw new Error("boom in flaky");
          return 2;
        });
      },
      { env: w.env, failureFunction: () => "handled" },
    ).handler,
  );
}

describe("run log fields of SDK 1.3", () => {
  it("shows labels, caller IP, flow-control key, the failure function's view and the failing step's name", async () => {
    const url = flaky("/fail-fields", { broken: true });
    const { workflowRunId } = await w.client.trigger({
      url,
      // A payload shaped like a step is the user's, not a step: it names nothing.
      body: { stepId: 99, targetStep: 7, stepName: "payload" },
      retries: 0,
      label: ["team-a", "nightly"],
      flowControl: { key: "fc-fields", parallelism: 2 },
    });
    const run = await runLog(workflowRunId, (r) => {
      expect(r["workflowState"]).toBe("RUN_FAILED");
      expect((r["failureFunction"] as Json | undefined)?.["state"]).toBe("CALLBACK_SUCCESS");
    });
    expect(run["labels"]).toEqual(["team-a", "nightly"]);
    expect(run["label"]).toBe("team-a");
    expect(run["workflowRunCallerIp"]).toMatch(/127\.0\.0\.1/);
    expect(run["flowControlKey"]).toBe("fc-fields");
    const f = run["failureFunction"] as Json;
    expect(f["failStatus"]).toBe(500);
    expect(String(f["failResponse"])).toContain("boom in flaky");
    expect(f["failHeaders"]).toMatchObject({ "Upstash-Error-Step-Name": ["flaky"] });
    expect(f["maxRetries"]).toEqual(expect.any(Number));
    const next = (run["steps"] as { type: string; steps: Json[] }[]).at(-1);
    expect(next?.type).toBe("next");
    // "flaky" is the second step: its id is the last recorded step's ("first", 1) plus one.
    expect(next?.steps[0]).toMatchObject({ state: "STEP_FAILED", stepName: "flaky", stepId: 2 });
    expect(next?.steps[0]?.["stepType"]).toBeUndefined();

    const { messages } = await w.client.dlq.list({ filter: { workflowRunId } });
    expect(messages[0]).toMatchObject({
      labels: ["team-a", "nightly"],
      failureFunctionState: "CALLBACK_SUCCESS",
    });
  });

  it("shows a retrying step's reported name and next delivery time", async () => {
    const state = { broken: true };
    const url = flaky("/retry-fields", state);
    const before = Date.now();
    const { workflowRunId } = await w.client.trigger({ url, retries: 2, retryDelay: "600000" });
    const run = await runLog(workflowRunId, (r) => {
      const next = stepsOf(r).find((s) => s["state"] === "STEP_RETRY");
      expect(next?.["stepName"]).toBe("flaky");
    });
    const retrying = stepsOf(run).find((s) => s["state"] === "STEP_RETRY") ?? {};
    expect(retrying["nextDeliveryTime"]).toBeGreaterThan(before + 500_000);
    expect(retrying["retryDelay"]).toBe("600000");
    await w.client.cancel({ ids: workflowRunId });
  });

  it("names a failed parallel step by its plan step: id, name and type", async () => {
    const url = w.app.route(
      "/fail-parallel",
      serve(
        async (context) => {
          await context.run("before", () => 0);
          await Promise.all([
            context.run("left", () => 1),
            context.run("right", (): number => {
              throw new Error("boom in right");
            }),
          ]);
        },
        { env: w.env },
      ).handler,
    );
    const { workflowRunId } = await w.client.trigger({ url, retries: 0 });
    const run = await runLog(workflowRunId, (r) => expect(r["workflowState"]).toBe("RUN_FAILED"));
    const failed = stepsOf(run).find((s) => s["state"] === "STEP_FAILED");
    // "before" is step 1, the parallel group steps 2 and 3.
    expect(failed).toMatchObject({ stepName: "right", stepId: 3, stepType: "Run" });
  });

  it("claims no step name when the failed answer names none (a non-retryable error)", async () => {
    const url = w.app.route(
      "/fail-unnamed",
      serve(
        async (context) => {
          await context.run("only", () => 1);
          throw new WorkflowNonRetryableError("stop here");
        },
        { env: w.env },
      ).handler,
    );
    const { workflowRunId } = await w.client.trigger({ url });
    const run = await runLog(workflowRunId, (r) => expect(r["workflowState"]).toBe("RUN_FAILED"));
    const failed = stepsOf(run).find((s) => s["state"] === "STEP_FAILED") ?? {};
    expect(failed["errors"]).toEqual([expect.objectContaining({ status: 489 })]);
    expect(failed).not.toHaveProperty("stepName");
    expect(failed).not.toHaveProperty("stepId");
  });

  it("shows a call's request and response, a wait's timeout and notify's run fields", async () => {
    const third = w.app.route("/third-fields", async () =>
      Response.json({ ok: 1 }, { status: 201 }),
    );
    const url = w.app.route(
      "/call-wait",
      serve(
        async (context) => {
          await context.call("ask", { url: third, method: "PUT", body: "question" });
          await context.waitForEvent("wait", "evt-fields", { timeout: "1h" });
        },
        { env: w.env },
      ).handler,
    );
    const { workflowRunId } = await w.client.trigger({ url });
    await eventually(async () => {
      expect(await w.client.getWaiters({ eventId: "evt-fields" })).toHaveLength(1);
    });
    const notified = (await w.client.notify({
      eventId: "evt-fields",
      eventData: "data",
      workflowRunId,
    })) as unknown as Json[];
    expect(notified[0]).toMatchObject({
      workflowRunId,
      workflowCreatedAt: expect.any(Number),
      deduplicated: false,
    });
    const run = await runLog(workflowRunId, (r) => expect(r["workflowState"]).toBe("RUN_SUCCESS"));
    const steps = stepsOf(run);
    expect(steps.find((s) => s["stepName"] === "ask")).toMatchObject({
      callUrl: third,
      callMethod: "PUT",
      callBody: "question",
      callResponseStatus: 201,
      callResponseBody: '{"ok":1}',
    });
    const wait = steps.find((s) => s["stepName"] === "wait") ?? {};
    expect(wait).toMatchObject({
      waitEventId: "evt-fields",
      waitTimeoutDuration: "1h",
      waitTimeout: false,
    });
    expect(wait["waitTimeoutDeadline"]).toBeGreaterThan(Date.now() + 3_000_000);
  });

  it("shows the invoked run on an invoke step", async () => {
    const child = createWorkflow(async (context: WorkflowContext<{ n: number }>) => {
      return await context.run("double", () => context.requestPayload.n * 2);
    });
    const parent = createWorkflow(async (context) => {
      await context.invoke("call-child", { workflow: child, body: { n: 4 } });
    });
    const { fetch: handler } = serveMany({ parent, child });
    w.app.route("/inv-fields/parent", (req) => handler(req, w.env));
    w.app.route("/inv-fields/child", (req) => handler(req, w.env));
    const { workflowRunId } = await w.client.trigger({ url: `${w.app.url}/inv-fields/parent` });
    const run = await runLog(workflowRunId, (r) => expect(r["workflowState"]).toBe("RUN_SUCCESS"));
    const step = stepsOf(run).find((s) => s["stepName"] === "call-child") ?? {};
    expect(step["invokedWorkflowRunId"]).toMatch(/^wfr_/);
    expect(step).toMatchObject({
      invokedWorkflowUrl: `${w.app.url}/inv-fields/child`,
      invokedWorkflowCreatedAt: expect.any(Number),
      invokedWorkflowRunBody: '{"n":4}',
    });
  });
});

describe("workflowUrl filters", () => {
  it("match the whole URL in the logs and the DLQ, every repeated value", async () => {
    const a = flaky("/url-filter/a", { broken: true });
    const b = flaky("/url-filter/b", { broken: true });
    const [ra, rb] = await w.client.trigger([
      { url: a, retries: 0 },
      { url: b, retries: 0 },
    ]);
    for (const r of [ra, rb]) {
      await runLog(r?.workflowRunId ?? "", (x) => expect(x["workflowState"]).toBe("RUN_FAILED"));
    }
    const prefix = `${w.app.url}/url-filter/`;
    expect((await w.client.logs({ filter: { workflowUrl: prefix } })).runs).toEqual([]);
    expect((await w.client.logs({ filter: { workflowUrl: a } })).runs).toHaveLength(1);
    // A prefix when asked for one, as the console does.
    const query = `workflowUrl=${encodeURIComponent(prefix)}&workflowUrlExactMatch=false`;
    const byPrefix = (await (await w.api(`/v2/workflows/events?${query}`)).json()) as {
      runs: { workflowUrl: string }[];
    };
    expect(byPrefix.runs.map((r) => r.workflowUrl).sort()).toEqual([a, b]);
    const both = await w.client.dlq.list({ filter: { workflowUrl: [a, b] } });
    expect(both.messages.map((m) => m.workflowUrl).sort()).toEqual([a, b]);
    expect((await w.client.dlq.list({ filter: { workflowUrl: prefix } })).messages).toEqual([]);
  });
});
