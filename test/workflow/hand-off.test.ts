import { serve } from "@upstash/workflow";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { counter } from "../ops/helpers.js";
import { workflowEnv, type WorkflowTestEnv } from "./harness.js";

/**
 * Issue 12: a workflow message due now is leased to the process storing it (the dispatcher's
 * local hand-off, as for a plain publish) and delivered without a claim; a delayed or
 * flow-controlled one waits for the claim exactly as a plain publish would. Seen through
 * `stashd_queue_attempts_started_total{how}`; this file's runs are the only deliveries of this
 * process while each test runs.
 */
let w: WorkflowTestEnv;

beforeAll(async () => {
  w = await workflowEnv();
});
afterAll(async () => {
  await w?.close();
});

const started = (how: "claimed" | "handed_off") =>
  counter(w.stashd.admin?.url ?? "", "stashd_queue_attempts_started_total", { how });

/**
 * A route of `steps` runs ending with `done`; `finished(runId)` resolves once the run has ended
 * (after `done`, its result is delivered once more: that delivery ends the run, so no delivery of
 * it is left to count in a later test).
 */
function stepsRoute(path: string, steps: number, before?: "sleep") {
  let finished = false;
  const url = w.app.route(
    path,
    serve(
      async (context) => {
        if (before === "sleep") await context.sleep("nap", 1);
        for (let i = 1; i <= steps; i++) await context.run(`s${i}`, () => i);
        await context.run("done", () => {
          finished = true;
        });
      },
      { env: w.env },
    ).handler,
  );
  const ended = async (workflowRunId: string) => {
    const { runs } = await w.client.logs({ workflowRunId });
    expect(runs[0]?.workflowState).toBe("RUN_SUCCESS");
  };
  return {
    url,
    finished: (runId: string) =>
      eventually(async () => {
        expect(finished).toBe(true);
        await ended(runId);
      }),
  };
}

describe("local hand-off of workflow messages", () => {
  it("delivers the trigger and every step without a claim", async () => {
    const claimed = await started("claimed");
    const handed = await started("handed_off");
    const route = stepsRoute("/handed", 5);
    const { workflowRunId } = await w.client.trigger({ url: route.url });
    await route.finished(workflowRunId);
    // The trigger, s1..s5 and done: seven deliveries, each started at its store.
    await eventually(async () => expect(await started("handed_off")).toBe(handed + 7));
    expect(await started("claimed")).toBe(claimed);
  });

  it("leaves a sleep's delayed step to the claim", async () => {
    const claimed = await started("claimed");
    const route = stepsRoute("/slept", 1, "sleep");
    const { workflowRunId } = await w.client.trigger({ url: route.url });
    await route.finished(workflowRunId);
    expect(await started("claimed")).toBe(claimed + 1);
  });

  it("leaves flow-controlled messages to their key's admission and the claim", async () => {
    const handed = await started("handed_off");
    const claimed = await started("claimed");
    const route = stepsRoute("/controlled", 2);
    const { workflowRunId } = await w.client.trigger({
      url: route.url,
      flowControl: { key: "wf-hand-off", parallelism: 1 },
    });
    await route.finished(workflowRunId);
    // The trigger, s1, s2 and done.
    await eventually(async () => expect(await started("claimed")).toBe(claimed + 4));
    expect(await started("handed_off")).toBe(handed);
  });
});
