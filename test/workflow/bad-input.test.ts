import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { workflowEnv, type WorkflowTestEnv } from "./harness.js";

let w: WorkflowTestEnv;

beforeAll(async () => {
  w = await workflowEnv();
});
afterAll(async () => {
  await w?.close();
});

const json = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify(body),
});

function stepItem(runId: string, stepId: number) {
  return {
    destination: `${w.app.url}/wf`,
    headers: { "upstash-workflow-runid": runId, "upstash-workflow-init": "false" },
    body: JSON.stringify({ stepId, stepName: `s${stepId}`, stepType: "Run", concurrent: 1 }),
  };
}

describe("bad input to the workflow API", () => {
  it("answers unknown run ids without a 5xx", async () => {
    expect((await w.api("/v2/workflows/runs/wfr_nope")).status).toBe(404);
    const del = await w.api("/v2/workflows/runs/wfr_nope?cancel=true", { method: "DELETE" });
    expect(await del.json()).toEqual({ cancelled: 0 });
    expect(await w.client.cancel(["wfr_nope"])).toEqual({ cancelled: 0 });
    expect(await w.client.notify({ eventId: "e", workflowRunId: "wfr_nope" })).toEqual([]);
    expect(await w.client.notify({ eventId: "nobody-waits", eventData: "x" })).toEqual([]);
    expect(await w.client.getWaiters({ eventId: "nobody-waits" })).toEqual([]);
    const { runs } = await w.client.logs({ workflowRunId: "wfr_nope" });
    expect(runs).toEqual([]);
    expect((await w.api("/v2/workflows/dlq/0-0")).status).toBe(404);
    expect((await w.api("/v2/workflows/dlq/callback/0-0", { method: "POST" })).status).toBe(404);
  });

  it("refuses malformed workflow publishes and waits with 400", async () => {
    const wait = (body: unknown) =>
      w.api("/v2/wait/evt", {
        ...json(body, { "upstash-workflow-runid": "wfr_nope" }),
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
    expect((await wait("{not json")).status).toBe(400);
    expect((await wait({ url: 1 })).status).toBe(400);
    expect((await wait({ url: "http://x", step: {}, timeout: "soon" })).status).toBe(400);
    expect((await wait({ url: `${w.app.url}/wf`, step: { stepId: 1 } })).status).toBe(400);
    const badId = await w.api("/v2/batch", json([{ ...stepItem("x y", 1) }]));
    expect(badId.status).toBe(400);
    const invoke = await w.api(`/v2/publish/${w.app.url}/wf`, {
      method: "POST",
      headers: {
        "upstash-workflow-runid": "wfr_inv",
        "upstash-workflow-init": "true",
        "upstash-workflow-invoke": "true",
      },
      body: "not json",
    });
    expect(invoke.status).toBe(400);
  });

  it("bounds a run's step list: one batch too many is a 412 and stores nothing", async () => {
    const trigger = await w.api(
      "/v2/batch",
      json([
        {
          destination: `${w.app.url}/wf`,
          headers: {
            "upstash-workflow-runid": "wfr_big",
            "upstash-workflow-init": "true",
            "upstash-delay": "1h",
          },
          body: "{}",
        },
      ]),
    );
    expect(trigger.status).toBe(201);
    const many = Array.from({ length: 1000 }, (_, i) => stepItem("wfr_big", i + 1));
    const tooMany = await w.api("/v2/batch", json(many));
    expect(tooMany.status).toBe(412);
    expect(((await tooMany.json()) as { error: string }).error).toContain("too many steps");
    const steps = (await (await w.api("/v2/workflows/runs/wfr_big")).json()) as unknown[];
    expect(steps).toHaveLength(1);
    const fits = await w.api("/v2/batch", json(many.slice(0, 999)));
    expect(fits.status).toBe(201);
    expect(await w.client.cancel({ ids: "wfr_big" })).toEqual({ cancelled: 1 });
  });
});
