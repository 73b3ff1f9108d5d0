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

/** A workflow whose step "flaky" fails while `broken` is set; it records every step it runs. */
function flaky(path: string, state: { broken: boolean; ran: string[]; failures: number }) {
  return w.app.route(
    path,
    serve<string>(
      async (context) => {
        await context.run("first", () => state.ran.push(`first:${context.requestPayload}`));
        await context.run("flaky", () => {
          if (state.broken) throw new Error("still broken");
          state.ran.push("flaky");
        });
        return "done";
      },
      {
        env: w.env,
        failureFunction: () => {
          state.failures++;
        },
      },
    ).handler,
  );
}

async function dlqEntryOf(workflowRunId: string) {
  return eventually(async () => {
    const { messages } = await w.client.dlq.list({ filter: { workflowRunId } });
    expect(messages).toHaveLength(1);
    return messages[0];
  });
}

describe("workflow DLQ", () => {
  it("resumes a failed run from the failed step and restarts another from the start", async () => {
    const state = { broken: true, ran: [] as string[], failures: 0 };
    const url = flaky("/flaky", state);
    const [a, b] = await w.client.trigger([
      { url, body: "a", retries: 0, label: "dlq-test" },
      { url, body: "b", retries: 0, label: "dlq-test" },
    ]);
    const ea = await dlqEntryOf(a?.workflowRunId ?? "");
    const eb = await dlqEntryOf(b?.workflowRunId ?? "");
    await eventually(() => expect(state.failures).toBe(2));
    expect(ea?.workflowUrl).toBe(url);
    const listed = await w.client.dlq.list({ filter: { label: "dlq-test" } });
    expect(listed.messages).toHaveLength(2);
    state.broken = false;
    state.ran.length = 0;
    const resumed = await w.client.dlq.resume({ dlqId: ea?.dlqId ?? "" });
    expect(resumed.workflowRunId).toBe(a?.workflowRunId);
    await eventually(() => expect(state.ran).toEqual(["flaky"]));
    const restarted = await w.client.dlq.restart({ dlqId: eb?.dlqId ?? "" });
    expect(restarted.workflowRunId).toBe(b?.workflowRunId);
    await eventually(() => expect(state.ran).toEqual(["flaky", "first:b", "flaky"]));
    expect((await w.client.dlq.list({ filter: { label: "dlq-test" } })).messages).toEqual([]);
    await eventually(async () => {
      const { runs } = await w.client.logs({ workflowRunId: a?.workflowRunId ?? "" });
      expect(runs[0]?.workflowState).toBe("RUN_SUCCESS");
    });
  });

  it("re-runs the failure callback and deletes entries by id and by filter", async () => {
    const state = { broken: true, ran: [] as string[], failures: 0 };
    const url = flaky("/flaky-cb", state);
    const [a, b] = await w.client.trigger([
      { url, body: "a", retries: 0, label: "cb-test" },
      { url, body: "b", retries: 0, label: "cb-other" },
    ]);
    const ea = await dlqEntryOf(a?.workflowRunId ?? "");
    await dlqEntryOf(b?.workflowRunId ?? "");
    await eventually(() => expect(state.failures).toBe(2));
    const again = await w.client.dlq.retryFailureFunction({ dlqId: ea?.dlqId ?? "" });
    expect(again.workflowRunId).toBe(a?.workflowRunId);
    await eventually(() => expect(state.failures).toBe(3));
    const typo = await w.api("/v2/workflows/dlq?labl=x", { method: "DELETE" });
    expect(typo.status).toBe(400);
    expect(await w.client.dlq.delete({ filter: { label: "cb-other" } })).toMatchObject({
      deleted: 1,
    });
    expect(await w.client.dlq.delete(ea?.dlqId ?? "")).toMatchObject({ deleted: 1 });
    expect((await w.api(`/v2/workflows/dlq/${ea?.dlqId ?? ""}`)).status).toBe(404);
    const unknown = await w.api("/v2/workflows/dlq/resume/0-0", { method: "POST" });
    expect(unknown.status).toBe(404);
  });
});
