import { serve } from "@upstash/workflow";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { workflowEnv, type WorkflowTestEnv } from "../workflow/harness.js";

/**
 * STASHD_QUEUE_MAX_FLOW_CONTROL_KEYS holds for workflows as for publishes
 * (flow-control-keys.test.ts): a trigger, a step (context.call's own key) or a wait naming a new
 * key past the bound is refused with a JSON 412 inside its store script, before anything of it is
 * stored; runs of the keys already made keep working.
 */

const MAX = 3;
let w: WorkflowTestEnv;
let plainUrl = "";
let callerUrl = "";
let waiterUrl = "";
let targetUrl = "";

beforeAll(async () => {
  // One partition: the bound is shared evenly by the partitions (3 would give 1 key each).
  w = await workflowEnv({ queueMaxFlowControlKeys: MAX, queuePartitions: 1 });
  const env = { env: w.env };
  plainUrl = w.app.route(
    "/plain",
    serve(async (context) => context.run("one", () => "done"), env).handler,
  );
  targetUrl = w.app.route("/target", async () => new Response("hi"));
  callerUrl = w.app.route(
    "/caller",
    serve(async (context) => {
      const key = (context.requestPayload as { key: string }).key;
      const r = await context.call("call", {
        url: targetUrl,
        method: "GET",
        flowControl: { key, parallelism: 1 },
      });
      return r.status;
    }, env).handler,
  );
  waiterUrl = w.app.route(
    "/waiter",
    serve(async (context) => {
      await context.waitForEvent("wait", "never-sent", { timeout: "1h" });
    }, env).handler,
  );
});
afterAll(() => w?.close());

const fcStatus = async (key: string) => (await w.api(`/v2/flowControl/${key}`)).status;

async function runState(workflowRunId: string): Promise<string | undefined> {
  const { runs } = (await w.client.logs({ workflowRunId })) as unknown as {
    runs: { workflowState: string }[];
  };
  return runs[0]?.workflowState;
}

describe("workflow flow-control keys are bounded", () => {
  it("refuses a trigger with a new key past the max; runs of existing keys go on", async () => {
    for (let i = 0; i < MAX; i++) {
      const { workflowRunId } = await w.client.trigger({
        url: plainUrl,
        flowControl: { key: `wf${i}`, parallelism: 1 },
      });
      await eventually(async () => expect(await runState(workflowRunId)).toBe("RUN_SUCCESS"));
    }
    await expect(
      w.client.trigger({
        url: plainUrl,
        workflowRunId: "wfr_refused",
        flowControl: { key: "wf-new", parallelism: 1 },
      }),
    ).rejects.toThrow(/flow-control keys \(3\) reached/);
    expect(await fcStatus("wf-new")).toBe(404);
    expect(await runState("wfr_refused")).toBeUndefined();
    // The same over the plain HTTP API: a JSON 412.
    const res = await w.api(`/v2/trigger/${plainUrl}`, {
      method: "POST",
      headers: { "upstash-flow-control-key": "wf-new", "upstash-flow-control-value": "rate=1" },
      body: "{}",
    });
    expect(res.status).toBe(412);
    expect(res.headers.get("content-type")).toMatch(/json/);
    expect(((await res.json()) as { error: string }).error).toMatch(/flow-control keys/);
    const again = await w.client.trigger({
      url: plainUrl,
      flowControl: { key: "wf0", parallelism: 1 },
    });
    await eventually(async () => expect(await runState(again.workflowRunId)).toBe("RUN_SUCCESS"));
  });

  it("fails a run whose step names a new key; a step with an existing key is stored", async () => {
    const refused = await w.client.trigger({ url: callerUrl, body: { key: "call-new" } });
    await eventually(async () => expect(await runState(refused.workflowRunId)).toBe("RUN_FAILED"));
    expect(await fcStatus("call-new")).toBe(404);
    const kept = await w.client.trigger({ url: callerUrl, body: { key: "wf1" } });
    await eventually(async () => expect(await runState(kept.workflowRunId)).toBe("RUN_SUCCESS"));
  });

  it("refuses a wait whose timeout or notification names a new key, nothing registered", async () => {
    const { workflowRunId } = await w.client.trigger({ url: waiterUrl });
    await eventually(async () =>
      expect((await (await w.api("/v2/waiters/never-sent")).json()) as unknown[]).toHaveLength(1),
    );
    const wait = (headers: Record<string, string>, body: Record<string, unknown>) =>
      w.api("/v2/wait/other-event", {
        method: "POST",
        headers: { "upstash-workflow-runid": workflowRunId, ...headers },
        body: JSON.stringify({ url: waiterUrl, step: { stepId: 2 }, timeout: "1h", ...body }),
      });
    for (const res of [
      await wait(
        { "upstash-flow-control-key": "notify-new", "upstash-flow-control-value": "rate=1" },
        {},
      ),
      await wait(
        {},
        {
          timeoutHeaders: {
            "Upstash-Flow-Control-Key": ["timeout-new"],
            "Upstash-Flow-Control-Value": ["rate=1"],
          },
        },
      ),
    ]) {
      expect(res.status).toBe(412);
      expect(res.headers.get("content-type")).toMatch(/json/);
      expect(((await res.json()) as { error: string }).error).toMatch(/flow-control keys/);
    }
    expect(await fcStatus("notify-new")).toBe(404);
    expect(await fcStatus("timeout-new")).toBe(404);
    expect((await (await w.api("/v2/waiters/other-event")).json()) as unknown[]).toHaveLength(0);
    // A wait naming an existing key is registered.
    const ok = await wait(
      { "upstash-flow-control-key": "wf2", "upstash-flow-control-value": "rate=1" },
      {},
    );
    expect(ok.status).toBe(200);
    expect(await runState(workflowRunId)).toBe("RUN_STARTED");
  });
});
