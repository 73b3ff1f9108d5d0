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

/** A workflow that runs one step and then sleeps `sleep` seconds before a second one. */
function sleeper(path: string, sleep: number, ran: string[]) {
  return w.app.route(
    path,
    serve(
      async (context) => {
        await context.run("before", () => ran.push("before"));
        await context.sleep("nap", sleep);
        await context.run("after", () => ran.push("after"));
      },
      { env: w.env },
    ).handler,
  );
}

interface RunLog {
  workflowRunId: string;
  workflowState: string;
  label?: string;
  steps: { type: string; steps: StepLog[] }[];
}

interface StepLog {
  stepName?: string;
  state: string;
  messageId: string;
  createdAt?: number;
  retryDelay?: string;
  errors?: { error: string; status: number; body: string; time: number }[];
}

describe("cancel and logs", () => {
  it("cancels one run: its delayed step never reaches the endpoint", async () => {
    const ran: string[] = [];
    const url = sleeper("/cancel-one", 1, ran);
    const { workflowRunId } = await w.client.trigger({ url });
    await eventually(() => expect(ran).toEqual(["before"]));
    // The second delivery (after "before") publishes the sleep step and answers.
    await eventually(() =>
      expect(w.app.hitsOf("/cancel-one").map((h) => h.status)).toEqual([200, 200]),
    );
    const sleeping = await eventually(async () => {
      const { runs } = (await w.client.logs({ workflowRunId })) as unknown as { runs: RunLog[] };
      const hit = new Set(
        w.app.hitsOf("/cancel-one").map((h) => h.headers.get("upstash-message-id")),
      );
      const waiting = runs[0]?.steps.at(-1)?.steps.find((s) => !hit.has(s.messageId));
      expect(waiting).toBeDefined();
      return waiting?.messageId ?? "";
    });
    expect((await w.api(`/v2/messages/${sleeping}`)).status).toBe(200);
    expect(await w.client.cancel({ ids: workflowRunId })).toEqual({ cancelled: 1 });
    // The delayed step is gone from the queue: it can never be delivered.
    expect((await w.api(`/v2/messages/${sleeping}`)).status).toBe(404);
    expect(
      w.app.hitsOf("/cancel-one").every((h) => h.headers.get("upstash-message-id") !== sleeping),
    ).toBe(true);
    expect(ran).toEqual(["before"]);
    const { runs } = (await w.client.logs({ workflowRunId })) as unknown as { runs: RunLog[] };
    expect(runs[0]?.workflowState).toBe("RUN_CANCELED");
    expect(await w.client.cancel({ ids: workflowRunId })).toEqual({ cancelled: 0 });
  });

  it("bulk-cancels by label and by URL prefix, never everything by mistake", async () => {
    const ran: string[] = [];
    const a = sleeper("/bulk/a", 30, ran);
    const b = sleeper("/bulk/b", 30, ran);
    const [ra, rb, rc] = await w.client.trigger([
      { url: a, label: "red" },
      { url: b, label: "blue" },
      { url: b, label: "green" },
    ]);
    await eventually(() => expect(ran).toHaveLength(3));
    const typo = await w.api("/v2/workflows/runs?labell=red", { method: "DELETE" });
    expect(typo.status).toBe(400);
    expect((await w.api("/v2/workflows/runs", { method: "DELETE" })).status).toBe(400);
    expect(await w.client.cancel({ filter: { label: "red" } })).toEqual({ cancelled: 1 });
    expect(
      await w.client.cancel({ filter: { workflowUrlStartingWith: `${w.app.url}/bulk/` } }),
    ).toEqual({ cancelled: 2 });
    for (const id of [ra, rb, rc]) {
      const { runs } = (await w.client.logs({
        workflowRunId: id?.workflowRunId ?? "",
      })) as unknown as {
        runs: RunLog[];
      };
      expect(runs[0]?.workflowState).toBe("RUN_CANCELED");
    }
  });

  it("lists runs with states, step groups, filters and cursor paging", async () => {
    const url = w.app.route(
      "/logged",
      serve(
        async (context) => {
          const x = await context.run("x", () => 1);
          const [y, z] = await Promise.all([context.run("y", () => 2), context.run("z", () => 3)]);
          return x + y + z;
        },
        { env: w.env },
      ).handler,
    );
    const triggered = await w.client.trigger([
      { url, label: "page", retryDelay: "250" },
      { url, label: "page", retryDelay: "250" },
      { url, label: "page", retryDelay: "250" },
    ]);
    const ids = triggered.map((t) => t.workflowRunId);
    await eventually(
      async () => {
        const res = await w.client.logs({ filter: { label: "page", state: "RUN_SUCCESS" } });
        expect(res.runs).toHaveLength(3);
      },
      { timeoutMs: 10_000 },
    );
    const first = await w.client.logs({ count: 2, filter: { label: "page" } });
    expect(first.runs).toHaveLength(2);
    expect(first.cursor).toBeTruthy();
    const second = await w.client.logs({
      count: 2,
      cursor: first.cursor,
      filter: { label: "page" },
    });
    expect(second.runs).toHaveLength(1);
    expect(second.cursor).toBeFalsy();
    const all = [...first.runs, ...second.runs].map((r) => r.workflowRunId);
    expect([...all].sort()).toEqual([...ids].sort());
    const one = (await w.client.logs({ workflowRunId: ids[0] ?? "" })) as unknown as {
      runs: RunLog[];
    };
    const run = one.runs[0];
    expect(run?.workflowState).toBe("RUN_SUCCESS");
    expect(run?.steps.map((g) => g.type)).toEqual(["sequential", "sequential", "parallel"]);
    expect(run?.steps[2]?.steps.map((s) => s.stepName).sort()).toEqual(["y", "z"]);
    // Every step shows when its message was stored, its retry settings and its headers.
    const [init, x] = (run?.steps ?? []).map((g) => g.steps[0]);
    const logged = {
      createdAt: expect.any(Number) as number,
      retries: 3,
      retryDelay: "250",
      headers: expect.objectContaining({
        "Content-Type": ["application/json"],
        "Upstash-Workflow-Sdk-Version": ["1"],
      }) as Record<string, string[]>,
    };
    expect(init).toMatchObject({ stepName: "init", stepType: "Initial", ...logged });
    expect(x).toMatchObject({ stepName: "x", state: "STEP_SUCCESS", ...logged });
    expect(x?.createdAt).toBeGreaterThanOrEqual(init?.createdAt ?? Infinity);
    expect((await w.api("/v2/workflows/events?groupBy=workflowRunId&stat=x")).status).toBe(400);
  });

  it("logs every failed attempt of a retrying step, and the step its cancel ended", async () => {
    const url = w.app.route(
      "/flaky",
      serve(
        async (context) => {
          await context.run("boom", () => {
            throw new Error("kaput");
          });
        },
        { env: w.env },
      ).handler,
    );
    const { workflowRunId } = await w.client.trigger({ url, retries: 5, retryDelay: "300" });
    const next = async () => {
      const { runs } = (await w.client.logs({ workflowRunId })) as unknown as { runs: RunLog[] };
      const group = runs[0]?.steps.at(-1);
      expect(group?.type).toBe("next");
      return group?.steps[0];
    };
    const retrying = await eventually(
      async () => {
        const step = await next();
        expect(step).toMatchObject({ state: "STEP_RETRY", retries: 5, retryDelay: "300" });
        expect(step?.errors?.length).toBeGreaterThanOrEqual(2);
        return step;
      },
      { timeoutMs: 10_000 },
    );
    for (const e of retrying?.errors ?? []) {
      expect(e).toMatchObject({ error: "kaput", status: 500, time: expect.any(Number) as number });
      expect(e.body).toContain("kaput");
    }
    await w.client.cancel({ ids: workflowRunId });
    const canceled = await next();
    expect(canceled).toMatchObject({
      messageId: retrying?.messageId,
      state: "STEP_CANCELED",
      retries: 5,
      retryDelay: "300",
    });
    expect(canceled?.errors?.length).toBeGreaterThanOrEqual(retrying?.errors?.length ?? 0);
  });

  it("bulk-cancels by path, by several exact URLs, by host with creation dates, and all", async () => {
    const ran: string[] = [];
    const urls = ["a", "b", "c", "d", "e"].map((x) => sleeper(`/hp/${x}`, 30, ran));
    const ids = (await w.client.trigger(urls.map((url) => ({ url })))).map((t) => t.workflowRunId);
    await eventually(() => expect(ran).toHaveLength(5));
    const state = async (id: string) => (await w.client.logs({ workflowRunId: id })).runs[0];
    expect(await w.client.cancel({ filter: { path: "/hp/a" } })).toEqual({ cancelled: 1 });
    expect(
      await w.client.cancel({ filter: { workflowUrl: [urls[1] ?? "", urls[2] ?? ""] } }),
    ).toEqual({ cancelled: 2 });
    const d = await state(ids[3] ?? "");
    const at = d?.workflowRunCreatedAt ?? 0;
    const host = new URL(w.app.url).hostname;
    expect(
      await w.client.cancel({ filter: { host, fromDate: at, toDate: at, path: "/hp/d" } }),
    ).toEqual({ cancelled: 1 });
    expect(await w.client.cancel({ filter: { host: "elsewhere.example" } })).toEqual({
      cancelled: 0,
    });
    expect((await state(ids[4] ?? ""))?.workflowState).toBe("RUN_STARTED");
    const all = await w.client.cancel({ all: true });
    expect(all.cancelled).toBeGreaterThanOrEqual(1);
    for (const id of ids) expect((await state(id))?.workflowState).toBe("RUN_CANCELED");
    // The logs take the same host and path filters.
    const byPath = await w.client.logs({ filter: { path: "/hp/e" } });
    expect(byPath.runs.map((r) => r.workflowRunId)).toEqual([ids[4]]);
  });

  it("ends a run that calls context.cancel(): no later step runs", async () => {
    const ran: string[] = [];
    const url = w.app.route(
      "/self-cancel",
      serve(
        async (context) => {
          await context.run("first", () => ran.push("first"));
          await context.cancel();
          await context.run("never", () => ran.push("never"));
        },
        { env: w.env },
      ).handler,
    );
    const { workflowRunId } = await w.client.trigger({ url });
    await eventually(async () => {
      const { runs } = await w.client.logs({ workflowRunId });
      expect(runs[0]?.workflowState).toBe("RUN_CANCELED");
    });
    await eventually(() => {
      const statuses = w.app.hitsOf("/self-cancel").map((h) => h.status);
      expect(statuses).toEqual(statuses.map(() => 200));
    });
    expect(ran).toEqual(["first"]);
    expect((await w.api(`/v2/workflows/runs/${workflowRunId}`)).status).toBe(404);
  });
});
