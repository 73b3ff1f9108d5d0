import { serve, WorkflowNonRetryableError, WorkflowRetryAfterError } from "@upstash/workflow";
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

interface WorkflowDlqMessage {
  dlqId: string;
  workflowRunId: string;
  workflowUrl: string;
  workflowCreatedAt: number;
  responseStatus: number;
  failureCallbackInfo?: { state?: string };
}

async function workflowDlq(query = ""): Promise<WorkflowDlqMessage[]> {
  const res = await w.api(`/v2/dlq?source=workflow${query}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { messages: WorkflowDlqMessage[] }).messages;
}

/** The last step the logs show for run `workflowRunId` (the `next` group's first). */
async function lastStep(workflowRunId: string) {
  const { runs } = await w.client.logs({ workflowRunId });
  const group = runs[0]?.steps.at(-1) as
    | { type: string; steps: { state: string; errors?: { error: string; status: number }[] }[] }
    | undefined;
  expect(group?.type).toBe("next");
  return group?.steps[0];
}

describe("workflow failures", () => {
  it("calls the failure function with the error and the initial payload after retries run out", async () => {
    let failure: { status: number; response: string; payload: unknown } | undefined;
    let attempts = 0;
    const url = w.app.route(
      "/failing",
      serve<{ order: number }>(
        async (context) => {
          await context.run("boom", () => {
            attempts++;
            throw new Error("kaput");
          });
        },
        {
          env: w.env,
          failureFunction: ({ context, failStatus, failResponse }) => {
            failure = {
              status: failStatus,
              response: failResponse,
              payload: context.requestPayload,
            };
          },
        },
      ).handler,
    );
    const { workflowRunId } = await w.client.trigger({ url, body: { order: 5 }, retries: 1 });
    await eventually(() => expect(failure).toBeDefined(), { timeoutMs: 10_000 });
    expect(failure).toEqual({ status: 500, response: "kaput", payload: { order: 5 } });
    expect(attempts).toBe(2);
    await eventually(async () => {
      const entries = await workflowDlq(`&workflowRunId=${workflowRunId}`);
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ workflowRunId, workflowUrl: url, responseStatus: 500 });
      expect(entries[0]?.failureCallbackInfo?.state).toBe("CALLBACK_SUCCESS");
    });
    // The plain DLQ does not list workflow runs.
    const plain = (await (await w.api("/v2/dlq")).json()) as { messages: unknown[] };
    expect(JSON.stringify(plain)).not.toContain(workflowRunId);
    expect((await w.api(`/v2/workflows/runs/${workflowRunId}`)).status).toBe(404);
    // The logs show the failed step with both of its failed attempts.
    const failed = await lastStep(workflowRunId);
    expect(failed).toMatchObject({ state: "STEP_FAILED", retries: 1 });
    expect(failed?.errors?.map((e) => [e.error, e.status])).toEqual([
      ["kaput", 500],
      ["kaput", 500],
    ]);
  });

  it("fails at once on a non-retryable error and posts to a separate failureUrl", async () => {
    const failureHits: string[] = [];
    const failureUrl = w.app.route("/failure-sink", async (req) => {
      failureHits.push(await req.text());
      return new Response("ok");
    });
    let attempts = 0;
    const url = w.app.route(
      "/fatal",
      serve(
        async (context) => {
          await context.run("stop", () => {
            attempts++;
            throw new WorkflowNonRetryableError("no point retrying");
          });
        },
        { env: w.env },
      ).handler,
    );
    const { workflowRunId } = await w.client.trigger({ url, body: "p", retries: 3, failureUrl });
    await eventually(() => expect(failureHits).toHaveLength(1), { timeoutMs: 10_000 });
    expect(attempts).toBe(1);
    const body = JSON.parse(failureHits[0] ?? "{}") as Record<string, unknown>;
    expect(body).toMatchObject({ status: 489, workflowRunId, url });
    expect(Buffer.from(String(body["sourceBody"]), "base64").toString()).toBe("p");
    const error = JSON.parse(Buffer.from(String(body["body"]), "base64").toString()) as {
      message: string;
    };
    expect(error.message).toBe("no point retrying");
    await eventually(async () =>
      expect(await workflowDlq(`&workflowRunId=${workflowRunId}`)).toHaveLength(1),
    );
  });

  it("retries after the Retry-After of a WorkflowRetryAfterError", async () => {
    const times: number[] = [];
    const url = w.app.route(
      "/later",
      serve(
        async (context) => {
          await context.run("wait-for-it", () => {
            times.push(Date.now());
            if (times.length === 1) throw new WorkflowRetryAfterError("not yet", 1);
          });
        },
        { env: w.env },
      ).handler,
    );
    await w.client.trigger({ url, retries: 2 });
    await eventually(() => expect(times).toHaveLength(2), { timeoutMs: 10_000 });
    expect((times[1] ?? 0) - (times[0] ?? 0)).toBeGreaterThanOrEqual(900);
  });

  it("fails a run whose endpoint is not a workflow endpoint", async () => {
    const plain = w.app.route("/plain", () => Promise.resolve(new Response("hello")));
    const { workflowRunId } = await w.client.trigger({ url: plain, retries: 2 });
    await eventually(async () => {
      const [entry] = await workflowDlq(`&workflowRunId=${workflowRunId}`);
      expect(entry?.responseStatus).toBe(489);
    });
    expect(w.app.hitsOf("/plain").length).toBeLessThanOrEqual(2);
    const failed = await lastStep(workflowRunId);
    expect(failed?.state).toBe("STEP_FAILED");
    expect(failed?.errors?.[0]?.status).toBe(489);
    expect(failed?.errors?.[0]?.error).toMatch(/^detected a non-workflow destination/);
  });
});
