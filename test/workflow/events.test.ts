import { serve, type WorkflowContext } from "@upstash/workflow";
import { createWorkflow, serveMany } from "@upstash/workflow/cloudflare";
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

type WaitOutcome = { eventData: unknown; timeout: boolean };

function waitingApp(
  path: string,
  eventId: string,
  timeout: `${bigint}s` | `${bigint}h`,
  into: WaitOutcome[],
) {
  return w.app.route(
    path,
    serve(
      async (context) => {
        const r = await context.waitForEvent("wait", eventId, { timeout });
        await context.run("record", () => {
          into.push({ eventData: r.eventData, timeout: r.timeout });
        });
      },
      { env: w.env },
    ).handler,
  );
}

describe("waitForEvent, notify, getWaiters", () => {
  it("releases every waiting run on notify and lists them as waiters before", async () => {
    const got: WaitOutcome[] = [];
    const url = waitingApp("/waiter", "evt-all", "1h", got);
    await w.client.trigger([{ url }, { url }]);
    await eventually(async () => {
      expect(await w.client.getWaiters({ eventId: "evt-all" })).toHaveLength(2);
    });
    const waiters = await w.client.getWaiters({ eventId: "evt-all" });
    expect(waiters[0]).toMatchObject({ url });
    const notified = await w.client.notify({ eventId: "evt-all", eventData: { ok: 1 } });
    expect(notified).toHaveLength(2);
    await eventually(() =>
      expect(got).toEqual([
        { eventData: { ok: 1 }, timeout: false },
        { eventData: { ok: 1 }, timeout: false },
      ]),
    );
    expect(await w.client.getWaiters({ eventId: "evt-all" })).toEqual([]);
    expect(await w.client.notify({ eventId: "evt-all", eventData: "late" })).toEqual([]);
  });

  it("times out a wait nobody notifies", async () => {
    const got: WaitOutcome[] = [];
    const url = waitingApp("/timeout", "evt-never", "1s", got);
    await w.client.trigger({ url });
    await eventually(() => expect(got).toEqual([{ eventData: undefined, timeout: true }]), {
      timeoutMs: 10_000,
    });
    expect(await w.client.notify({ eventId: "evt-never", eventData: "x" })).toEqual([]);
  });

  it("keeps a notify for one run until that run waits (lookback)", async () => {
    const got: WaitOutcome[] = [];
    let gate = false;
    const url = w.app.route(
      "/lookback",
      serve(
        async (context) => {
          await context.run("gate", () => {
            if (!gate) throw new Error("not yet");
          });
          const r = await context.waitForEvent("wait", "evt-run", { timeout: "1h" });
          await context.run("record", () => {
            got.push({ eventData: r.eventData, timeout: r.timeout });
          });
        },
        { env: w.env },
      ).handler,
    );
    const { workflowRunId } = await w.client.trigger({ url, retries: 20, retryDelay: "50" });
    const early = await w.client.notify({ eventId: "evt-run", eventData: "early", workflowRunId });
    expect(early).toEqual([]);
    gate = true;
    await eventually(() => expect(got).toEqual([{ eventData: "early", timeout: false }]), {
      timeoutMs: 10_000,
    });
  });

  it("notifies from inside another workflow (context.notify)", async () => {
    const got: WaitOutcome[] = [];
    const waiting = waitingApp("/waits-for-peer", "evt-peer", "1h", got);
    await w.client.trigger({ url: waiting });
    await eventually(async () =>
      expect(await w.client.getWaiters({ eventId: "evt-peer" })).toHaveLength(1),
    );
    const notifier = w.app.route(
      "/notifier",
      serve(
        async (context) => {
          await context.notify("tell", "evt-peer", "hello");
        },
        { env: w.env },
      ).handler,
    );
    await w.client.trigger({ url: notifier });
    await eventually(() => expect(got).toEqual([{ eventData: "hello", timeout: false }]));
  });
});

describe("invoke and webhooks", () => {
  it("invokes another workflow and gets its result", async () => {
    let result: unknown;
    const child = createWorkflow(async (context: WorkflowContext<{ n: number }>) => {
      return await context.run("double", () => context.requestPayload.n * 2);
    });
    const parent = createWorkflow(async (context) => {
      const r = await context.invoke("call-child", { workflow: child, body: { n: 21 } });
      await context.run("keep", () => {
        result = r;
      });
    });
    const { fetch: handler } = serveMany({ parent, child });
    w.app.route("/many/parent", (req) => handler(req, w.env));
    w.app.route("/many/child", (req) => handler(req, w.env));
    await w.client.trigger({ url: `${w.app.url}/many/parent` });
    await eventually(() => expect(result).toEqual({ body: 42 }), {
      timeoutMs: 10_000,
    });
  });

  it("waits for a webhook call made before and after the wait", async () => {
    const got: { method: string; body: string }[] = [];
    let hookUrl = "";
    const url = w.app.route(
      "/hooked",
      serve(
        async (context) => {
          const hook = await context.createWebhook("hook");
          await context.run("publish-url", () => {
            hookUrl = hook.webhookUrl;
          });
          for (const name of ["first", "second"]) {
            const r = await context.waitForWebhook(`wait-${name}`, hook, "1h");
            const request = r.request;
            const body = request ? await request.text() : "";
            await context.run(`record-${name}`, () => {
              got.push({ method: request?.method ?? "", body });
            });
          }
        },
        { env: w.env },
      ).handler,
    );
    await w.client.trigger({ url });
    await eventually(() => expect(hookUrl).not.toBe(""));
    const first = await fetch(hookUrl, { method: "POST", body: "one" });
    expect(first.status).toBe(200);
    expect((await fetch(hookUrl, { method: "PUT", body: "two" })).status).toBe(200);
    await eventually(
      () =>
        expect(got).toEqual([
          { method: "POST", body: "one" },
          { method: "PUT", body: "two" },
        ]),
      { timeoutMs: 10_000 },
    );
    const ended = hookUrl.replace(/\/[^/]+\/([^/]+)$/, "/wfr_none/$1");
    expect((await fetch(ended, { method: "POST" })).status).toBe(404);
  });
});
