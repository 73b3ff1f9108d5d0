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

describe("workflow step types", () => {
  it("runs parallel runs and sleeps (Promise.all) and continues exactly once", async () => {
    const seen: string[] = [];
    const url = w.app.route(
      "/parallel",
      serve(
        async (context) => {
          const [x, y] = await Promise.all([
            context.run("x", () => {
              seen.push("x");
              return 1;
            }),
            context.run("y", () => {
              seen.push("y");
              return 2;
            }),
            context.sleep("nap", 1),
          ]);
          await context.run("z", () => {
            seen.push(`z:${x + y}`);
          });
        },
        { env: w.env },
      ).handler,
    );
    const { workflowRunId } = await w.client.trigger({ url });
    await eventually(() => expect(seen).toContain("z:3"), { timeoutMs: 10_000 });
    await eventually(async () => {
      expect((await w.api(`/v2/workflows/runs/${workflowRunId}`)).status).toBe(404);
    });
    expect(seen.filter((s) => s === "x")).toHaveLength(1);
    expect(seen.filter((s) => s.startsWith("z"))).toHaveLength(1);
    await eventually(() =>
      expect(w.app.hitsOf("/parallel").every((h) => h.status === 200)).toBe(true),
    );
  });

  it("makes a context.call with its own retries and hands the result to the run", async () => {
    let calls = 0;
    const third = w.app.route("/third", async (req) => {
      calls++;
      if (calls === 1) return new Response("busy", { status: 503 });
      return Response.json({ got: await req.text(), auth: req.headers.get("x-call") });
    });
    let result: { status: number; body: unknown } | undefined;
    const url = w.app.route(
      "/caller",
      serve(
        async (context) => {
          const r = await context.call("ask", {
            url: third,
            method: "POST",
            body: JSON.stringify({ q: 1 }),
            headers: { "x-call": "yes" },
            retries: 1,
          });
          await context.run("keep", () => {
            result = { status: r.status, body: r.body };
          });
        },
        { env: w.env },
      ).handler,
    );
    await w.client.trigger({ url });
    await eventually(() => expect(result).toBeDefined(), { timeoutMs: 10_000 });
    expect(result).toEqual({ status: 200, body: { got: '{"q":1}', auth: "yes" } });
    expect(calls).toBe(2);
  });

  it("returns a failed context.call's last status to the run without failing it", async () => {
    const third = w.app.route("/down", () => Promise.resolve(new Response("no", { status: 500 })));
    let status: number | undefined;
    const url = w.app.route(
      "/tolerant",
      serve(
        async (context) => {
          const r = await context.call("try", { url: third, method: "GET" });
          await context.run("after", () => {
            status = r.status;
          });
          return "fine";
        },
        { env: w.env },
      ).handler,
    );
    const { workflowRunId } = await w.client.trigger({ url });
    await eventually(() => expect(status).toBe(500), { timeoutMs: 10_000 });
    await eventually(async () => {
      expect((await w.api(`/v2/workflows/runs/${workflowRunId}`)).status).toBe(404);
    });
    const dlq = await w.api("/v2/dlq?source=workflow");
    expect(JSON.stringify(await dlq.json())).not.toContain(workflowRunId);
  });

  it("sleeps until a given time (sleepUntil)", async () => {
    let woke = 0;
    const url = w.app.route(
      "/until",
      serve(
        async (context) => {
          const at = await context.run("at", () => Math.ceil(Date.now() / 1000) + 1);
          await context.sleepUntil("wake", at);
          await context.run("woke", () => {
            woke = Date.now();
          });
          return at;
        },
        { env: w.env },
      ).handler,
    );
    const started = Date.now();
    await w.client.trigger({ url });
    await eventually(() => expect(woke).toBeGreaterThan(0), { timeoutMs: 10_000 });
    expect(woke - started).toBeGreaterThanOrEqual(900);
  });

  it("runs a run, a call and a wait in parallel and continues once with all three", async () => {
    const after: unknown[] = [];
    const third = w.app.route("/par-third", async () => new Response("called", { status: 200 }));
    const url = w.app.route(
      "/par-mixed",
      serve(
        async (context) => {
          const [a, call, event] = await Promise.all([
            context.run("a", () => "A"),
            context.call("c", { url: third, method: "GET" }),
            context.waitForEvent("w", "evt-par-mixed", { timeout: "1h" }),
          ]);
          await context.run("after", () => {
            after.push([a, call.status, call.body, event.eventData, event.timeout]);
          });
        },
        { env: w.env },
      ).handler,
    );
    const { workflowRunId } = await w.client.trigger({ url });
    await eventually(
      async () => expect(await w.client.getWaiters({ eventId: "evt-par-mixed" })).toHaveLength(1),
      {
        timeoutMs: 10_000,
      },
    );
    const released = await w.client.notify({ eventId: "evt-par-mixed", eventData: "data" });
    expect(released).toHaveLength(1);
    await eventually(() => expect(after).toEqual([["A", 200, "called", "data", false]]), {
      timeoutMs: 10_000,
    });
    await eventually(async () => {
      const { runs } = await w.client.logs({ workflowRunId });
      expect(runs[0]?.workflowState).toBe("RUN_SUCCESS");
    });
    expect(w.app.hitsOf("/par-third")).toHaveLength(1);
  });
});
