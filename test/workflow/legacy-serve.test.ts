import { Client as QStashClient } from "@upstash/qstash";
import { serve as legacyServe } from "@upstash/qstash/workflow";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { workflowEnv, type WorkflowTestEnv } from "./harness.js";

/**
 * The deprecated `serve` of `@upstash/qstash/workflow` (docs/workflow.md §15): its endpoint
 * starts the run itself when it is published to, and answers without any workflow header.
 */

let w: WorkflowTestEnv;
let qstash: QStashClient;

beforeAll(async () => {
  w = await workflowEnv();
  qstash = new QStashClient({ baseUrl: w.stashd.queue.url, token: w.stashd.queue.token });
});
afterAll(async () => {
  await w?.close();
});

interface LogStep {
  stepName?: string;
  stepType?: string;
  out?: unknown;
}
interface LogRun {
  workflowRunId: string;
  workflowState: string;
  steps: { type: string; steps: LogStep[] }[];
}

async function runLog(runId: string): Promise<LogRun | undefined> {
  const res = await w.api(`/v2/workflows/events?workflowRunId=${runId}`);
  expect(res.status).toBe(200);
  const { runs } = (await res.json()) as { runs: LogRun[] };
  return runs[0];
}

describe("the deprecated @upstash/qstash/workflow serve", () => {
  it("runs two steps, a sleep and a final step in order when published to", async () => {
    const seen: string[] = [];
    let runId = "";
    let sleptAt = 0;
    const path = "/legacy";
    const url = w.app.route(
      path,
      legacyServe<{ name: string }>(
        async (context) => {
          runId = context.workflowRunId;
          const a = await context.run("first", () => {
            seen.push("first");
            return `hello ${context.requestPayload.name}`;
          });
          const b = await context.run("second", () => {
            seen.push("second");
            return `${a}!`;
          });
          await context.sleep("pause", 1);
          await context.run("final", () => {
            sleptAt = sleptAt || Date.now();
            seen.push(`final:${b}`);
          });
        },
        { env: w.env },
      ),
    );
    // As the old SDK documents: publish the payload to the endpoint.
    const started = Date.now();
    await qstash.publishJSON({ url, body: { name: "stashd" } });

    await eventually(() => expect(seen).toContain("final:hello stashd!"), { timeoutMs: 15_000 });
    expect(seen).toEqual(["first", "second", "final:hello stashd!"]);
    expect(sleptAt - started).toBeGreaterThanOrEqual(1000);
    expect(runId).toMatch(/^wfr_/);

    await eventually(async () => {
      const run = await runLog(runId);
      expect(run?.workflowState).toBe("RUN_SUCCESS");
    });
    const run = await runLog(runId);
    const names = run?.steps.flatMap((g) => g.steps.map((s) => s.stepName ?? ""));
    expect(names).toEqual(["init", "first", "second", "pause", "final"]);
    // Every request the endpoint got was answered 200 (no 489, no retry).
    await eventually(() => expect(w.app.hitsOf(path).every((h) => h.status === 200)).toBe(true));
    // The publish, the trigger delivery and one delivery per step: 1 + 1 + 4.
    expect(w.app.hitsOf(path)).toHaveLength(6);
    const first = w.app.hitsOf(path)[0];
    expect(first?.headers.get("upstash-workflow-sdk-version")).toBeNull();
  });

  it("calls the failure function with the failed run's payload and steps", async () => {
    let failed: { status: number; response: string; payload: unknown; runId: string } | undefined;
    let runId = "";
    const path = "/legacy-failing";
    const url = w.app.route(
      path,
      legacyServe<{ order: number }>(
        async (context) => {
          runId = context.workflowRunId;
          await context.run("ok", () => "fine");
          await context.run("boom", () => {
            throw new Error("card declined");
          });
        },
        {
          env: w.env,
          // (`retries` reaches only the trigger: this serve publishes its steps with 3.)
          failureFunction: (context, status, response) => {
            failed = {
              status,
              response,
              payload: context.requestPayload,
              runId: context.workflowRunId,
            };
          },
        },
      ),
    );
    await qstash.publishJSON({ url, body: { order: 7 } });
    await eventually(() => expect(failed).toBeDefined(), { timeoutMs: 10_000 });
    expect(failed).toEqual({
      status: 500,
      response: "card declined",
      payload: { order: 7 },
      runId,
    });
    await eventually(async () => {
      const res = await w.api(`/v2/workflows/events?workflowRunId=${runId}`);
      const { runs } = (await res.json()) as {
        runs: { workflowState: string; failureFunction?: { state: string } }[];
      };
      expect(runs[0]?.workflowState).toBe("RUN_FAILED");
      expect(runs[0]?.failureFunction?.state).toBe("CALLBACK_SUCCESS");
    });
  });

  it("makes a context.call and parallel runs", async () => {
    const third = w.app.route("/legacy-third", async (req) =>
      Response.json({ got: await req.text() }),
    );
    let result: unknown;
    let sum = 0;
    const path = "/legacy-call";
    const url = w.app.route(
      path,
      legacyServe(
        async (context) => {
          const got = await context.call<{ got: string }>("ask", third, "POST", { q: 1 });
          const [x, y] = await Promise.all([context.run("x", () => 1), context.run("y", () => 2)]);
          await context.run("done", () => {
            result = got;
            sum = x + y;
          });
        },
        { env: w.env },
      ),
    );
    await qstash.publishJSON({ url, body: {} });
    await eventually(() => expect(sum).toBe(3), { timeoutMs: 10_000 });
    expect(result).toEqual({ got: JSON.stringify({ q: 1 }) });
    expect(w.app.hitsOf("/legacy-third")).toHaveLength(1);
    const runId = w.app.hitsOf(path)[1]?.headers.get("upstash-workflow-runid") ?? "";
    await eventually(async () => expect((await runLog(runId))?.workflowState).toBe("RUN_SUCCESS"));
  });

  it("still fails a run of the current SDK whose endpoint is not a workflow endpoint", async () => {
    const plain = w.app.route("/legacy-plain", () => Promise.resolve(new Response("hello")));
    const { workflowRunId } = await w.client.trigger({ url: plain, retries: 1 });
    await eventually(async () => {
      const run = await runLog(workflowRunId);
      expect(run?.workflowState).toBe("RUN_FAILED");
    });
    // The step delivery, not retried, and the failure callback.
    expect(w.app.hitsOf("/legacy-plain").length).toBeLessThanOrEqual(2);
  });
});
