import { serve, WorkflowNonRetryableError, type Client } from "@upstash/workflow";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import { startApp, type App } from "../workflow/harness.js";
import { loggedIn, recordDialogs, type ConsoleEnv } from "./harness.js";
import { fragileRoute, workflowClientOf, workflowEnvOf } from "./workflow-helpers.js";

/**
 * The workflow runs page in chromium against a real stashd and real `@upstash/workflow` runs
 * (`serve` on a local node:http server, `Client.trigger`), each action checked through the API.
 */
let env: ConsoleEnv;
let page: Page;
let app: App;
let client: Client;
let workflowEnv: Record<string, string>;
const dialogs = recordDialogs();

beforeAll(async () => {
  ({ env, page } = await loggedIn({ dialogs }));
  app = await startApp();
  client = workflowClientOf(env);
  workflowEnv = workflowEnvOf(env);
});
afterAll(async () => {
  await app?.close();
  await env?.close();
});

const button = (name: string) => page.getByRole("button", { name, exact: true });
const toast = (text: string) => page.locator(".toast", { hasText: text }).first().waitFor();

interface RunLog {
  workflowState: string;
  steps: { type: string; steps: { stepName?: string; stepId?: number; state?: string }[] }[];
}

async function runLog(workflowRunId: string): Promise<RunLog | undefined> {
  const res = await env.q.api(`/v2/workflows/events?workflowRunId=${workflowRunId}`);
  return ((await res.json()) as { runs: RunLog[] }).runs[0];
}

test("workflow runs: listed with their steps, a sleeping run cancelled from the page", async () => {
  const url = app.route(
    "/nap",
    serve<string>(
      async (context) => {
        await context.run("greet", () => `hello ${context.requestPayload}`);
        await context.sleep("nap", 3600);
        await context.run("after", () => "never");
      },
      { env: workflowEnv },
    ).handler,
  );
  const { workflowRunId } = await client.trigger({ url, body: "console", label: "sleepy" });
  await eventually(async () => {
    const names = (await runLog(workflowRunId))?.steps.flatMap((g) =>
      g.steps.map((s) => s.stepName),
    );
    expect(names).toContain("nap");
  });
  await page.goto(`${env.url}#/workflows`);
  await page.fill("input[name=Label]", "sleepy");
  await button("Search").click();
  const row = page.locator("table[aria-label='workflow runs'] tbody tr", {
    hasText: workflowRunId,
  });
  await row.getByText("RUN_STARTED").waitFor();
  await env.shot(page, "workflows");
  await row.click();
  expect(await page.evaluate<string>("location.hash")).toBe(`#/workflows/runs/${workflowRunId}`);
  const steps = page.locator("ol[aria-label='workflow steps']");
  const greet = steps.locator("[data-step=greet]");
  await greet.getByText("Run", { exact: true }).waitFor();
  await greet.getByText("Output").click();
  await greet.getByText('"hello console"').waitFor();
  await steps.locator("[data-step=nap]").getByText("SleepFor").waitFor();
  // What the run waits for, and until when (the sleep's start + 3600 s).
  await page
    .locator("[data-waiting]", { hasText: /Sleeping \(nap, 3600 s\) until \d{4}-/ })
    .waitFor();
  await env.shot(page, "workflow-run");
  // The run links to its messages, and the message back to its run.
  await steps.locator("[data-step='(next)']").getByRole("link", { name: "message" }).click();
  // The message's page names its run (src: console/src/pages/message-page.tsx, "Workflow run").
  const runLink = page.getByRole("link", { name: workflowRunId, exact: true }).first();
  await runLink.click();
  await steps.locator("[data-step=nap]").waitFor();
  await page.getByRole("link", { name: "Its messages in the logs" }).click();
  await page.locator("table[aria-label=events] tbody tr").first().waitFor();
  expect(await page.locator("input[name='Workflow run']").inputValue()).toBe(workflowRunId);
  await page.goBack();
  await button("Cancel run").click();
  await toast("Run cancelled");
  await page.goto(`${env.url}#/workflows?label=sleepy`);
  await row.getByText("RUN_CANCELED").waitFor();
  expect((await runLog(workflowRunId))?.workflowState).toBe("RUN_CANCELED");
});

test("workflow DLQ: a failed run listed, then restarted from the page", async () => {
  const state = { broken: true, done: 0 };
  const url = fragileRoute(env, app, "/fragile", state);
  const { workflowRunId } = await client.trigger({ url, retries: 0 });
  await eventually(async () =>
    expect((await runLog(workflowRunId))?.workflowState).toBe("RUN_FAILED"),
  );
  await page.goto(`${env.url}#/workflows/dlq`);
  const row = page.locator("table[aria-label='workflow dlq'] tbody tr", { hasText: workflowRunId });
  await row.waitFor();
  // The failed step's name as the SDK reported it.
  await row.locator("code", { hasText: "work" }).waitFor();
  await env.shot(page, "workflow-dlq");
  // The row opens the run at its failure: the step by name (the SDK's Upstash-Error-Step-Name),
  // the error and the response.
  await row.locator("td").first().click();
  const failure = page.locator("section[aria-label=failure]");
  await failure.getByRole("heading", { name: "Failed at step 1, work" }).waitFor();
  await failure
    .getByText(/broken/)
    .first()
    .waitFor();
  await failure.getByText(/HTTP 500/).waitFor();
  await env.shot(page, "workflow-failed-run");
  await page.goBack();
  state.broken = false;
  // Asked first, as on the run's page: declined, nothing is sent.
  dialogs.answer = false;
  await row.getByRole("button", { name: "Restart" }).click();
  expect(dialogs.asked.at(-1)).toBe(
    `Restart workflow run ${workflowRunId} from its first step? Its completed steps run again.`,
  );
  expect((await runLog(workflowRunId))?.workflowState).toBe("RUN_FAILED");
  dialogs.answer = true;
  await row.getByRole("button", { name: "Restart" }).click();
  await toast("Restarted");
  await eventually(async () =>
    expect((await runLog(workflowRunId))?.workflowState).toBe("RUN_SUCCESS"),
  );
  expect(state.done).toBe(1);
  await page.getByText("No failed workflow runs.").waitFor();
});

test("a failed run names its failed step, or says honestly which step it came after", async () => {
  const url = app.route(
    "/checkout",
    serve<{ stop: boolean }>(
      async (context) => {
        await context.run("reserve", () => "reserved");
        if (context.requestPayload.stop) throw new WorkflowNonRetryableError("between steps");
        await context.run("charge-card", () => {
          throw new Error("card declined");
        });
      },
      { env: workflowEnv },
    ).handler,
  );
  const named = await client.trigger({ url, body: { stop: false }, retries: 0 });
  const unnamed = await client.trigger({ url, body: { stop: true }, retries: 0 });
  const failedStep = async (id: string) => {
    const run = await runLog(id);
    expect(run?.workflowState).toBe("RUN_FAILED");
    return run?.steps.flatMap((g) => g.steps).find((x) => x.state === "STEP_FAILED");
  };
  // The run's log API names the step: the second one, "charge-card".
  await eventually(async () =>
    expect(await failedStep(named.workflowRunId)).toMatchObject({
      stepName: "charge-card",
      stepId: 2,
    }),
  );
  await page.goto(`${env.url}#/workflows/runs/${named.workflowRunId}`);
  const failure = page.locator("section[aria-label=failure]");
  await failure.getByRole("heading", { name: "Failed at step 2, charge-card" }).waitFor();
  expect(await failure.locator("[data-failed-step]").textContent()).toBe("charge-card");
  await failure
    .getByText(/card declined/)
    .first()
    .waitFor();
  await env.shot(page, "workflow-failed-step");
  // A failure outside any step (a 489 names no step): the step after the last completed one.
  await eventually(async () =>
    expect(await failedStep(unnamed.workflowRunId)).not.toHaveProperty("stepName"),
  );
  await page.goto(`${env.url}#/workflows/runs/${unnamed.workflowRunId}`);
  await failure.getByRole("heading", { name: 'Failed at the step after "reserve"' }).waitFor();
  await failure
    .getByText(/between steps/)
    .first()
    .waitFor();
});

test("a failed run's page offers resume, restart and delete, each asked first, each saying what it did", async () => {
  const state = { broken: true, done: 0 };
  const url = fragileRoute(env, app, "/recoverable", state);
  const failedRun = async () => {
    const { workflowRunId } = await client.trigger({ url, retries: 0 });
    await eventually(async () =>
      expect((await runLog(workflowRunId))?.workflowState).toBe("RUN_FAILED"),
    );
    return workflowRunId;
  };
  const first = await failedRun();
  await page.goto(`${env.url}#/workflows/runs/${first}`);
  const recover = page.locator("section[aria-label='recover the run']");
  await recover.getByRole("button", { name: "Resume from failed step" }).waitFor();
  expect(await recover.getByRole("button").allTextContents()).toEqual([
    "Resume from failed step",
    "Restart from the start",
    // serve() gives every run a failure callback (the workflow's own URL).
    "Send failure callback again",
    "Delete from DLQ",
  ]);
  await recover.locator("[data-failure-callback]", { hasText: url }).waitFor();
  await env.shot(page, "workflow-run-recover");
  // On a phone the actions wrap inside the page.
  await page.setViewportSize({ width: 390, height: 800 });
  try {
    const width = await page.evaluate<number>("document.documentElement.scrollWidth");
    expect(width).toBe(390);
    await env.shot(page, "phone-workflow-run-recover");
  } finally {
    await page.setViewportSize({ width: 1440, height: 900 });
  }

  // Declined: nothing happens.
  dialogs.answer = false;
  await recover.getByRole("button", { name: "Resume from failed step" }).click();
  expect(dialogs.asked.at(-1)).toBe(`Resume workflow run ${first} from its failed step?`);
  expect((await runLog(first))?.workflowState).toBe("RUN_FAILED");
  expect(await page.locator("[data-outcome]").count()).toBe(0);

  dialogs.answer = true;
  state.broken = false;
  await recover.getByRole("button", { name: "Resume from failed step" }).click();
  const outcome = page.locator("[data-outcome]");
  await outcome.waitFor();
  expect(await outcome.textContent()).toMatch(
    new RegExp(
      `^Resumed at \\d{4}-\\d\\d-\\d\\d .+: run ${first} runs again from its failed step; the steps done before it are kept\\.$`,
    ),
  );
  await eventually(async () => expect((await runLog(first))?.workflowState).toBe("RUN_SUCCESS"));
  expect(state.done).toBe(1);
  await page.getByRole("button", { name: "Refresh now" }).click();
  await page.locator(".facts").getByText("RUN_SUCCESS").waitFor();
  expect(await recover.count()).toBe(0);
  await env.shot(page, "workflow-run-resumed");

  // Deleted from the DLQ: the page says so, and that nothing can be recovered any more.
  state.broken = true;
  const second = await failedRun();
  await page.goto(`${env.url}#/workflows/runs/${second}`);
  await recover.getByRole("button", { name: "Delete from DLQ" }).click();
  expect(dialogs.asked.at(-1)).toBe(
    `Delete run ${second} from the workflow DLQ? It can no longer be resumed or restarted.`,
  );
  await page
    .locator("[data-outcome]", {
      hasText: `Deleted run ${second} from the workflow DLQ: it can no longer be resumed or restarted.`,
    })
    .waitFor();
  await page.locator("[data-no-recovery]").waitFor();
  const dlq = (await (await env.q.api("/v2/workflows/dlq")).json()) as {
    messages: { workflowRunId: string }[];
  };
  expect(dlq.messages.map((m) => m.workflowRunId)).not.toContain(second);
  await env.shot(page, "workflow-run-deleted");
});
