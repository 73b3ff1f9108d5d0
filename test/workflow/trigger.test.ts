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

describe("client.trigger options", () => {
  it("applies the trigger's headers, label, retries, retry delay and delay to every step", async () => {
    const seen: { step: string; header: string | null; label: string | undefined }[] = [];
    let failOnce = true;
    const url = w.app.route(
      "/configured",
      serve<{ n: number }>(
        async (context) => {
          await context.run("one", () => {
            seen.push({ step: "one", header: context.headers.get("x-user"), label: context.label });
          });
          await context.run("two", () => {
            if (failOnce) {
              failOnce = false;
              throw new Error("first attempt fails");
            }
            seen.push({ step: "two", header: context.headers.get("x-user"), label: context.label });
          });
          return context.requestPayload.n;
        },
        { env: w.env },
      ).handler,
    );
    const started = Date.now();
    const { workflowRunId } = await w.client.trigger({
      url,
      body: { n: 7 },
      headers: { "x-user": "u1" },
      label: "lbl",
      retries: 2,
      retryDelay: "200",
      delay: "1s",
      flowControl: { key: "wf-fc", parallelism: 1 },
    });
    await eventually(() => expect(seen.map((s) => s.step)).toEqual(["one", "two"]), {
      timeoutMs: 10_000,
    });
    expect(seen.every((s) => s.header === "u1" && s.label === "lbl")).toBe(true);
    const hits = w.app.hitsOf("/configured");
    expect(hits[0]?.headers.get("upstash-workflow-runid")).toBe(workflowRunId);
    const failed = hits.findIndex((h) => h.status === 500);
    expect(failed).toBeGreaterThan(0);
    // The failed step was retried (run config) and its retry carries Upstash-Retried.
    await eventually(() => expect(hits[failed + 1]?.headers.get("upstash-retried")).toBe("1"));
    const createdAt = Number(hits[0]?.headers.get("upstash-workflow-createdat"));
    expect(createdAt).toBeGreaterThanOrEqual(started - 1000);
    expect((hits[0]?.at ?? 0) - started).toBeGreaterThanOrEqual(900);
    const fc = await w.api("/v2/flowControl/wf-fc");
    expect(fc.status).toBe(200);
  });

  it("triggers a batch of runs and deduplicates an active run id", async () => {
    const ran: string[] = [];
    const url = w.app.route(
      "/batch",
      serve<string>(
        async (context) => {
          await context.run("mark", () => ran.push(context.requestPayload));
          await context.sleep("hold", 1);
        },
        { env: w.env },
      ).handler,
    );
    const ids = await w.client.trigger([
      { url, body: "a", workflowRunId: "fixed-a" },
      { url, body: "b" },
    ]);
    expect(ids[0]).toEqual({ workflowRunId: "wfr_fixed-a" });
    const again = await w.api("/v2/batch", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify([
        {
          destination: url,
          headers: {
            "upstash-workflow-init": "true",
            "upstash-workflow-runid": "wfr_fixed-a",
            "upstash-workflow-url": url,
          },
          body: "a2",
        },
      ]),
    });
    expect(((await again.json()) as { deduplicated?: boolean }[])[0]?.deduplicated).toBe(true);
    await eventually(() => expect([...ran].sort()).toEqual(["a", "b"]), { timeoutMs: 10_000 });
    await eventually(
      async () => expect((await w.api("/v2/workflows/runs/wfr_fixed-a")).status).toBe(404),
      { timeoutMs: 10_000 },
    );
    // An ended run id starts a fresh run.
    await w.client.trigger({ url, body: "c", workflowRunId: "fixed-a" });
    await eventually(() => expect(ran).toContain("c"), { timeoutMs: 10_000 });
  });

  it("refuses steps for unknown or ended runs with 400 and answers DELETE with 200", async () => {
    const step = (runId: string) =>
      w.api("/v2/batch", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify([
          {
            destination: `${w.app.url}/nowhere`,
            headers: { "upstash-workflow-runid": runId, "upstash-workflow-init": "false" },
            body: JSON.stringify({ stepId: 1, stepName: "a", stepType: "Run", concurrent: 1 }),
          },
        ]),
      });
    const res = await step("wfr_unknown");
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toContain("wfr_unknown");
    const del = await w.api("/v2/workflows/runs/wfr_unknown?cancel=false", { method: "DELETE" });
    expect(del.status).toBe(200);
    expect((await w.api("/v2/workflows/runs/wfr_unknown")).status).toBe(404);
    const bad = await w.api("/v2/batch", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify([
        { destination: `${w.app.url}/x`, headers: { "upstash-workflow-runid": "bad id!" } },
      ]),
    });
    expect(bad.status).toBe(400);
  });
});
