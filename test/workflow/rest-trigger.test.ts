import { serve } from "@upstash/workflow";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { workflowEnv, type WorkflowTestEnv } from "./harness.js";

let w: WorkflowTestEnv;

beforeAll(async () => {
  w = await workflowEnv();
});
afterAll(async () => {
  await w?.close();
});

interface RunLog {
  workflowState: string;
  label?: string;
  steps: {
    type: string;
    steps: { state: string; errors?: { error: string; status: number }[] }[];
  }[];
}

const trigger = (url: string, headers: Record<string, string> = {}, body = "") =>
  w.api(`/v2/trigger/${url}`, { method: "POST", headers, body });

async function finished(workflowRunId: string, state: string): Promise<RunLog> {
  return eventually(
    async () => {
      const { runs } = (await w.client.logs({ workflowRunId })) as unknown as { runs: RunLog[] };
      expect(runs[0]?.workflowState).toBe(state);
      return runs[0] as RunLog;
    },
    { timeoutMs: 10_000 },
  );
}

describe("POST /v2/trigger/{url}", () => {
  it("starts a run with the body as payload and the headers as its configuration", async () => {
    const seen: unknown[] = [];
    const url = w.app.route(
      "/rest",
      serve<{ n: number }>(
        async (context) => {
          const doubled = await context.run("double", () => context.requestPayload.n * 2);
          await context.run("record", () => {
            seen.push(doubled, context.headers.get("x-user"), context.label);
          });
          return doubled;
        },
        { env: w.env },
      ).handler,
    );
    const started = Date.now();
    const res = await trigger(
      url,
      {
        "content-type": "application/json",
        "upstash-forward-x-user": "u7",
        "upstash-label": "rest",
        "upstash-retries": "1",
      },
      JSON.stringify({ n: 21 }),
    );
    expect(res.status).toBe(200);
    const { workflowRunId, workflowCreatedAt } = (await res.json()) as {
      workflowRunId: string;
      workflowCreatedAt: number;
    };
    expect(workflowRunId).toMatch(/^wfr_[\w-]{21}$/);
    expect(workflowCreatedAt).toBeGreaterThanOrEqual(started - 1000);
    const run = await finished(workflowRunId, "RUN_SUCCESS");
    expect(run.label).toBe("rest");
    expect(seen).toEqual([42, "u7", "rest"]);
    await eventually(() => {
      const statuses = w.app.hitsOf("/rest").map((h) => h.status);
      expect(statuses).toEqual(statuses.map(() => 200));
    });
  });

  it("takes a given run id, refuses it while active and calls the failure function", async () => {
    const failures: string[] = [];
    const url = w.app.route(
      "/rest-fail",
      serve(
        async (context) => {
          await context.sleep("hold", 1);
          await context.run("boom", () => {
            throw new Error("rest boom");
          });
        },
        {
          env: w.env,
          failureFunction: async ({ failResponse }) => {
            failures.push(failResponse);
          },
        },
      ).handler,
    );
    const res = await trigger(url, { "upstash-workflow-runid": "mine", "upstash-retries": "0" });
    expect(await res.json()).toMatchObject({ workflowRunId: "wfr_mine" });
    const again = await trigger(url, { "upstash-workflow-runid": "wfr_mine" });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: string }).error).toContain("wfr_mine");
    await finished("wfr_mine", "RUN_FAILED");
    await eventually(() => expect(failures).toEqual(["rest boom"]), { timeoutMs: 10_000 });
  });

  it("fails the run when the endpoint's SDK is older than 1.0", async () => {
    // Answers like a workflow endpoint but without the SDK's own version header.
    const url = w.app.route(
      "/old-sdk",
      async () =>
        new Response("{}", { status: 200, headers: { "Upstash-Workflow-Sdk-Version": "1" } }),
    );
    const res = await trigger(url);
    const { workflowRunId } = (await res.json()) as { workflowRunId: string };
    const run = await finished(workflowRunId, "RUN_FAILED");
    const failed = run.steps.at(-1)?.steps[0];
    expect(failed?.state).toBe("STEP_FAILED");
    expect(failed?.errors?.[0]?.error).toContain("only usable with sdk versions after v1.0.0");
    expect(failed?.errors?.[0]?.status).toBe(489);
    // One delivery, then the failure callback the trigger set up (to the workflow URL).
    await eventually(() => expect(w.app.hitsOf("/old-sdk")).toHaveLength(2));
    const callback = w.app.hitsOf("/old-sdk")[1];
    expect(callback?.headers.get("upstash-workflow-failure-callback")).toBe("true");
    expect(callback?.headers.get("upstash-workflow-runid")).toBe(workflowRunId);
  });

  it("refuses a destination that is not a URL", async () => {
    expect((await trigger("my-group")).status).toBe(400);
    expect((await trigger("ftp://x")).status).toBe(400);
    const bad = await trigger(`${w.app.url}/x`, { "upstash-workflow-runid": "bad id!" });
    expect(bad.status).toBe(400);
  });
});
