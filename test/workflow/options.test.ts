import { serve } from "@upstash/workflow";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { workflowEnv, type WorkflowTestEnv } from "./harness.js";

/** Small enough that a few 600-byte step results push a step array past it (lazy fetch). */
const MAX_MESSAGE_BYTES = 2_000;

let w: WorkflowTestEnv;
/** A stashd with a small maximum message size. */
let small: WorkflowTestEnv;

beforeAll(async () => {
  [w, small] = await Promise.all([
    workflowEnv(),
    workflowEnv({ queueMaxMessageBytes: MAX_MESSAGE_BYTES }),
  ]);
});
afterAll(async () => {
  await w?.close();
  await small?.close();
});

interface StepLog {
  stepName?: string;
  out?: unknown;
  headers?: Record<string, string[]>;
}

interface RunLog {
  workflowState: string;
  steps: { type: string; steps: StepLog[] }[];
}

async function runLog(workflowRunId: string, env = w): Promise<RunLog | undefined> {
  const { runs } = (await env.client.logs({ workflowRunId })) as unknown as { runs: RunLog[] };
  return runs[0];
}

describe("large step lists", () => {
  it("sends an empty body above the message size and the endpoint fetches the steps", async () => {
    const results: string[] = [];
    const url = small.app.route(
      "/lazy",
      serve(
        async (context) => {
          let last = "";
          for (const n of [1, 2, 3, 4, 5]) {
            last = await context.run(`big-${n}`, () => `${n}`.repeat(600));
          }
          await context.run("check", () => results.push(last));
          return last.length;
        },
        { env: small.env },
      ).handler,
    );
    const { workflowRunId } = await small.client.trigger({ url, body: "start" });
    await eventually(() => expect(results).toEqual(["5".repeat(600)]), { timeoutMs: 10_000 });
    await eventually(async () =>
      expect((await runLog(workflowRunId, small))?.workflowState).toBe("RUN_SUCCESS"),
    );
    const hits = small.app.hitsOf("/lazy");
    // Early deliveries carry the array; once it outgrew the limit the body is empty.
    expect(hits[0]?.body).toContain("messageId");
    const lazy = hits.filter((h) => h.body === "");
    expect(lazy.length).toBeGreaterThan(0);
    await eventually(() => expect(hits.map((h) => h.status)).toEqual(hits.map(() => 200)));
    expect(hits.every((h) => Buffer.byteLength(h.body) <= MAX_MESSAGE_BYTES)).toBe(true);
  });
});

describe("trigger timing and redaction", () => {
  it("holds the first step until notBefore", async () => {
    const url = w.app.route(
      "/not-before",
      serve(
        async (context) => {
          await context.run("only", () => "x");
        },
        { env: w.env },
      ).handler,
    );
    const notBefore = Math.floor(Date.now() / 1000) + 2;
    await w.client.trigger({ url, notBefore });
    await eventually(() => expect(w.app.hitsOf("/not-before").length).toBe(2), {
      timeoutMs: 10_000,
    });
    expect(w.app.hitsOf("/not-before")[0]?.at).toBeGreaterThanOrEqual(notBefore * 1000);
  });

  it("redacts the named fields of every step in the logs, not in deliveries", async () => {
    const seen: (string | null)[] = [];
    const url = w.app.route(
      "/redacted",
      serve<{ card: string }>(
        async (context) => {
          await context.run("pay", () => {
            seen.push(context.headers.get("authorization"));
            return context.requestPayload.card;
          });
        },
        { env: w.env },
      ).handler,
    );
    const { workflowRunId } = await w.client.trigger({
      url,
      body: { card: "4111" },
      headers: { Authorization: "Bearer secret", "X-Plain": "visible" },
      redact: { body: true, header: ["Authorization"] },
    });
    const run = await eventually(
      async () => {
        const r = await runLog(workflowRunId);
        expect(r?.workflowState).toBe("RUN_SUCCESS");
        return r;
      },
      { timeoutMs: 10_000 },
    );
    // The endpoint still gets the real values.
    expect(seen).toContain("Bearer secret");
    const steps = (run?.steps ?? []).flatMap((g) => g.steps);
    expect(steps.map((s) => s.stepName)).toEqual(["init", "pay"]);
    for (const s of steps) {
      expect(String(s.out)).toMatch(/^REDACTED:[0-9a-f]{64}$/);
      expect(s.headers?.["Authorization"]?.[0]).toMatch(/^REDACTED:/);
      expect(s.headers?.["X-Plain"]).toEqual(["visible"]);
      // No retry delay was set: the field is absent, as the SDK's StepLog type has it.
      expect(s).not.toHaveProperty("retryDelay");
    }
    expect(JSON.stringify(run)).not.toContain("4111");
    expect(JSON.stringify(run)).not.toContain("secret");
  });
});

describe("flow control of a run", () => {
  /** A three-step workflow recording how many of its deliveries ran at once and when. */
  function tracked(path: string) {
    const state = { inFlight: 0, most: 0, starts: [] as number[], done: 0 };
    const handler = serve(
      async (context) => {
        for (const n of [1, 2, 3]) {
          await context.run(`s${n}`, () => n);
        }
      },
      { env: w.env },
    ).handler;
    const url = w.app.route(path, async (request) => {
      state.inFlight += 1;
      state.most = Math.max(state.most, state.inFlight);
      state.starts.push(Date.now());
      try {
        // Hold each delivery a little so overlapping deliveries would be seen.
        await new Promise((r) => setTimeout(r, 30));
        return await handler(request);
      } finally {
        state.inFlight -= 1;
      }
    });
    return { url, state };
  }

  /** Waits until every one of `runs` ended successfully. */
  async function allSucceeded(runs: { workflowRunId: string }[]) {
    await eventually(
      async () => {
        const { runs: logs } = await w.client.logs({ filter: { state: "RUN_SUCCESS" } });
        const done = new Set(logs.map((r) => r.workflowRunId));
        expect(runs.every((r) => done.has(r.workflowRunId))).toBe(true);
      },
      { timeoutMs: 15_000 },
    );
  }

  it("keeps parallelism across the steps of several concurrent runs", async () => {
    const { url, state } = tracked("/fc-parallel");
    const flowControl = { key: "wf-par", parallelism: 1 };
    const runs = await w.client.trigger([
      { url, flowControl },
      { url, flowControl },
      { url, flowControl },
    ]);
    await allSucceeded(runs);
    // Three runs of four deliveries each (the trigger and three steps), never two at once.
    expect(state.starts.length).toBe(12);
    expect(state.most).toBe(1);
  });

  it("keeps the rate across the steps of several concurrent runs", async () => {
    const { url, state } = tracked("/fc-rate");
    const flowControl = { key: "wf-rate", rate: 3, period: "1s" as const };
    const runs = await w.client.trigger([
      { url, flowControl },
      { url, flowControl },
    ]);
    await allSucceeded(runs);
    expect(state.starts.length).toBe(8);
    // Rate periods start at an admission and admit at most 3 each, so any 7 deliveries in a
    // row (more than two periods' worth) span at least one period (less the delivery jitter).
    const starts = [...state.starts].sort((a, b) => a - b);
    for (let i = 0; i + 6 < starts.length; i++) {
      expect((starts[i + 6] ?? 0) - (starts[i] ?? 0)).toBeGreaterThanOrEqual(900);
    }
  });
});
