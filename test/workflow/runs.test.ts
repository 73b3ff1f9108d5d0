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

describe("workflow runs through @upstash/workflow", () => {
  it("runs run -> sleep -> run to the end, then refuses the ended run", async () => {
    const seen: string[] = [];
    const url = w.app.route(
      "/basic",
      serve<{ name: string }>(
        async (context) => {
          const a = await context.run("a", () => {
            seen.push(`a:${context.requestPayload.name}`);
            return "A";
          });
          await context.sleep("s", 1);
          const b = await context.run("b", () => {
            seen.push(`b:${a}`);
            return `${a}B`;
          });
          return b;
        },
        { env: w.env },
      ).handler,
    );
    const { workflowRunId } = await w.client.trigger({ url, body: { name: "x" } });
    await eventually(() => expect(seen).toEqual(["a:x", "b:A"]), { timeoutMs: 10_000 });
    await eventually(async () => {
      const res = await w.api(`/v2/workflows/runs/${workflowRunId}`);
      expect(res.status).toBe(404);
    });
    const statuses = () => w.app.hitsOf("/basic").map((h) => h.status);
    await eventually(() => expect(statuses().every((s) => s === 200)).toBe(true));
  });
});
