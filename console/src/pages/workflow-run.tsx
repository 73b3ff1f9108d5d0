import { ApiError, query, queue, queueSend } from "../api.js";
import { href } from "../routes.js";
import {
  Action,
  Badge,
  ErrorLine,
  Facts,
  fmtTime,
  HeaderList,
  Page,
  Pre,
  useLoad,
  type Children,
} from "../ui.js";
import { WorkflowTabs } from "./workflow-dlq.js";
import { useState } from "preact/hooks";
import { refreshNow } from "../refresh.js";

/** What the last action on the run did (or why it failed), shown on top of the page until the next. */
interface Outcome {
  ok: boolean;
  text: string;
}

/** The run's workflow DLQ entry: what decides which recovery the page offers. */
interface RunDlqEntry {
  dlqId: string;
  failureCallback?: string;
  failureCallbackInfo?: { state?: string };
}

/**
 * A failed run's recovery (the workflow DLQ API, docs/workflow.md §12): resume from the failed
 * step (the steps done before it kept), restart from the first step, send the failure callback
 * again (when the run has one), or delete its DLQ entry. Each asks first and says what it did.
 * Without a DLQ entry (deleted, or expired) nothing can be recovered, and the page says so.
 */
function Recover(p: { run: Run; say: (o: Outcome) => void }) {
  const r = p.run;
  const say = p.say;
  const entry = useLoad(async () => {
    if (!r.dlqId) return null;
    return queue<RunDlqEntry>(`workflows/dlq/${encodeURIComponent(r.dlqId)}`).catch(
      (err: unknown) => {
        if (err instanceof ApiError && err.status === 404) return null;
        throw err;
      },
    );
  }, [r.dlqId]);
  const e = entry.data;
  if (entry.error) return <ErrorLine error={entry.error} />;
  if (e === undefined) return null;
  if (e === null) {
    return (
      <p class="hint" data-no-recovery>
        This run has no entry in the workflow DLQ (deleted, or expired), so it cannot be resumed or
        restarted from here: trigger the workflow again.
      </p>
    );
  }
  const id = encodeURIComponent(e.dlqId);
  const runId = r.workflowRunId;
  const act = (path: string, method: string, text: (at: string) => string) => async () => {
    try {
      const out = await queueSend<{ workflowCreatedAt?: number }>(method, path);
      say({ ok: true, text: text(fmtTime(out?.workflowCreatedAt ?? Date.now())) });
    } catch (err) {
      say({ ok: false, text: err instanceof Error ? err.message : String(err) });
      throw err;
    }
    refreshNow(); // the run, its DLQ entry and the counts
  };
  return (
    <section class="card recover" aria-label="recover the run">
      <h2>Recover this run</h2>
      <p class="hint">
        DLQ entry <code>{e.dlqId}</code>. Resume keeps the steps done before the failure and runs
        the failed step again; Restart runs the workflow again from its first step with the same
        input. Both keep the run id.
      </p>
      {e.failureCallback !== undefined && (
        <p class="hint" data-failure-callback>
          Failure callback: <span class="url">{e.failureCallback}</span>
          {e.failureCallbackInfo?.state ? ` (${e.failureCallbackInfo.state})` : ""}
        </p>
      )}
      <div class="bar">
        <Action
          label="Resume from failed step"
          kind="primary"
          confirm={`Resume workflow run ${runId} from its failed step?`}
          run={act(
            `workflows/dlq/resume/${id}`,
            "POST",
            (at) =>
              `Resumed at ${at}: run ${runId} runs again from its failed step; the steps done before it are kept.`,
          )}
        />
        <Action
          label="Restart from the start"
          confirm={`Restart workflow run ${runId} from its first step? Its completed steps run again.`}
          run={act(
            `workflows/dlq/restart/${id}`,
            "POST",
            (at) => `Restarted at ${at}: run ${runId} runs again from its first step.`,
          )}
        />
        {e.failureCallback !== undefined && (
          <Action
            label="Send failure callback again"
            confirm={`Send the failure callback of run ${runId} again (to ${e.failureCallback})?`}
            run={act(
              `workflows/dlq/callback/${id}`,
              "POST",
              () => `Failure callback of run ${runId} sent again to ${e.failureCallback ?? ""}.`,
            )}
          />
        )}
        <Action
          label="Delete from DLQ"
          kind="danger"
          confirm={`Delete run ${runId} from the workflow DLQ? It can no longer be resumed or restarted.`}
          run={act(
            `workflows/dlq/${id}`,
            "DELETE",
            () =>
              `Deleted run ${runId} from the workflow DLQ: it can no longer be resumed or restarted.`,
          )}
        />
      </div>
    </section>
  );
}

/** A failed attempt of a step's message (docs/workflow.md, Logs). */
export interface StepError {
  error: string;
  status?: number;
  headers?: Record<string, string[]>;
  body?: string;
  time?: number;
}

/**
 * One step as GET /v2/workflows/events lists it: completed steps carry their name, type, output
 * and timing; the pending ones of the `next` group only their message id, state and errors.
 */
export interface RunStep {
  messageId?: string;
  stepId?: number;
  stepName?: string;
  stepType?: string;
  state: string;
  out?: unknown;
  createdAt?: number;
  retries?: number;
  retryDelay?: string;
  concurrent?: number;
  headers?: Record<string, string[]>;
  errors?: StepError[];
  sleepFor?: number;
  sleepUntil?: number;
  waitEventId?: string;
  waitTimeoutDeadline?: number;
  waitTimeout?: boolean;
  callUrl?: string;
  callMethod?: string;
  callHeaders?: Record<string, string[]>;
  callBody?: unknown;
  callResponseStatus?: number;
  callResponseBody?: unknown;
  invokedWorkflowRunId?: string;
  invokedWorkflowRunBody?: unknown;
}

/** One run of GET /v2/workflows/events?groupBy=workflowRunId (docs/workflow.md, Logs). */
export interface Run {
  workflowRunId: string;
  workflowUrl: string;
  workflowState: string;
  workflowRunCreatedAt: number;
  workflowRunCompletedAt?: number;
  workflowRunResponse?: unknown;
  label?: string;
  dlqId?: string;
  steps: { type: string; steps: RunStep[] }[];
}

/** A step of the timeline: the step, its group, and when the step before it ended. */
interface TimelineStep extends RunStep {
  group: string;
  key: string;
  previousAt: number | undefined;
}

/** Completed steps (the init step included); the pending "next" group is not counted. */
export const stepCount = (r: Run): number =>
  r.steps.filter((g) => g.type !== "next").reduce((n, g) => n + g.steps.length, 0);

/** The run's steps in order, parallel groups flattened, each knowing when the one before ended. */
function timeline(r: Run): TimelineStep[] {
  const out: TimelineStep[] = [];
  let previousAt: number | undefined = r.workflowRunCreatedAt;
  r.steps.forEach((g, gi) => {
    const groupStart = previousAt;
    for (const [si, s] of g.steps.entries()) {
      out.push({ ...s, group: g.type, key: `${gi}.${si}`, previousAt: groupStart });
      if (s.createdAt !== undefined) previousAt = Math.max(previousAt ?? 0, s.createdAt);
    }
  });
  return out;
}

const fmtDuration = (ms: number): string =>
  ms < 1000
    ? `${ms} ms`
    : ms < 120_000
      ? `${(ms / 1000).toFixed(1)} s`
      : `${Math.round(ms / 60_000)} min`;

/**
 * What a running run waits for, from its last completed step: a sleep (until when), an event
 * (which, and until when before the timeout), or a call's answer; undefined when it just runs.
 */
export function waitingFor(r: Run): string | undefined {
  if (r.workflowState !== "RUN_STARTED") return undefined;
  const done = r.steps.filter((g) => g.type !== "next").flatMap((g) => g.steps);
  const last = done[done.length - 1];
  if (!last) return undefined;
  if (last.sleepUntil !== undefined) {
    return `Sleeping (${last.stepName ?? "sleep"}) until ${fmtTime(last.sleepUntil * 1000)}`;
  }
  if (last.sleepFor !== undefined && last.createdAt !== undefined) {
    const until = last.createdAt + last.sleepFor * 1000;
    return `Sleeping (${last.stepName ?? "sleep"}, ${last.sleepFor} s) until ${fmtTime(until)}`;
  }
  if (last.waitEventId !== undefined && !last.waitTimeout && last.out === undefined) {
    const until = last.waitTimeoutDeadline
      ? ` until ${fmtTime(last.waitTimeoutDeadline * 1000)}`
      : "";
    return `Waiting for event "${last.waitEventId}" (${last.stepName ?? "wait"})${until}, then timing out`;
  }
  return undefined;
}

/** The run page (`#/workflows/runs/<id>`): facts, what it waits for, the failure, the timeline. */
export function RunPage(p: { workflowRunId: string }) {
  const [outcome, setOutcome] = useState<Outcome | undefined>();
  const run = useLoad(
    () =>
      queue<{ runs: Run[] }>(
        `workflows/events${query({ workflowRunId: p.workflowRunId, groupBy: "workflowRunId" })}`,
      ).then((x) => x.runs[0] ?? null),
    [p.workflowRunId],
  );
  const r = run.data;
  return (
    <Page title={`Workflow run ${p.workflowRunId}`} actions={<WorkflowTabs />}>
      <ErrorLine error={run.error} />
      {run.loading && r === undefined && <p class="hint">Loading…</p>}
      {r === null && <p class="empty">No workflow run {p.workflowRunId} in the logs.</p>}
      {outcome && (
        <p class={`outcome${outcome.ok ? "" : " error"}`} role="status" data-outcome>
          {outcome.text}
        </p>
      )}
      {r && <RunView run={r} reload={run.reload} say={setOutcome} />}
    </Page>
  );
}

function RunView(p: { run: Run; reload: () => void; say: (o: Outcome) => void }) {
  const r = p.run;
  const steps = timeline(r);
  const waits = waitingFor(r);
  const failed = steps.find((s) => s.state === "STEP_FAILED");
  return (
    <>
      <div class="bar">
        {r.workflowState === "RUN_STARTED" && (
          <Action
            label="Cancel run"
            kind="danger"
            confirm={`Cancel workflow run ${r.workflowRunId}?`}
            done="Run cancelled"
            run={() =>
              queueSend(
                "DELETE",
                `workflows/runs/${encodeURIComponent(r.workflowRunId)}?cancel=true`,
              ).then(p.reload)
            }
          />
        )}
      </div>
      <Facts
        items={[
          ["State", <Badge text={r.workflowState} />],
          ["URL", <span class="url">{r.workflowUrl}</span>],
          ["Created", fmtTime(r.workflowRunCreatedAt)],
          ["Completed", fmtTime(r.workflowRunCompletedAt)],
          ["Label", r.label ?? "—"],
          ["DLQ id", r.dlqId ?? "—"],
        ]}
      />
      <p>
        <a href={href.list("logs", { workflowRunId: r.workflowRunId })}>Its messages in the logs</a>
      </p>
      {waits && (
        <p class="waiting" data-waiting>
          {waits}
        </p>
      )}
      {failed && <FailedStep step={failed} steps={steps} />}
      {r.workflowState === "RUN_FAILED" && <Recover run={r} say={p.say} />}
      <h2>Steps</h2>
      <ol class="timeline" aria-label="workflow steps">
        {steps.map((s) => (
          <StepItem key={s.key} s={s} />
        ))}
      </ol>
      {r.workflowRunResponse !== undefined && (
        <>
          <h2>Response</h2>
          <Pre value={r.workflowRunResponse} />
        </>
      )}
    </>
  );
}

/**
 * The step a failed message was running, as the run's log names it (its id, name and type, each
 * when something recorded it: docs/workflow.md §12); when nothing names it, the honest "the step
 * after" the last completed one.
 */
function FailedStepTitle(p: { step: RunStep; steps: TimelineStep[] }) {
  const { stepId, stepName, stepType } = p.step;
  if (stepName === undefined) {
    const done = p.steps.filter((s) => s.group !== "next" && s.stepName !== undefined);
    const last = done[done.length - 1];
    return <h2>Failed at {last ? `the step after "${last.stepName ?? ""}"` : "the first step"}</h2>;
  }
  return (
    <h2>
      Failed at {stepId !== undefined ? `step ${stepId}, ` : "step "}
      <code data-failed-step>{stepName}</code>
      {stepType !== undefined && <span class="step-type"> ({stepType})</span>}
    </h2>
  );
}

/** The failure on top of a failed run: which step, its last error, status and response body. */
function FailedStep(p: { step: TimelineStep; steps: TimelineStep[] }) {
  const errors = p.step.errors ?? [];
  const last = errors[errors.length - 1];
  return (
    <section class="card failure" aria-label="failure" role="alert">
      <FailedStepTitle step={p.step} steps={p.steps} />
      <p>
        {last ? last.error : "no attempt error recorded"}
        {last?.status !== undefined && ` (HTTP ${last.status})`}; {errors.length}{" "}
        {errors.length === 1 ? "attempt" : "attempts"}
        {p.step.messageId && (
          <>
            {" · "}
            <a href={href.message(p.step.messageId)}>its message</a>
          </>
        )}
      </p>
      {last?.body !== undefined && last.body !== "" && (
        <details open>
          <summary>Response body</summary>
          <Pre value={last.body} />
        </details>
      )}
      {last?.headers && (
        <details>
          <summary>Response headers</summary>
          <HeaderList headers={last.headers} />
        </details>
      )}
    </section>
  );
}

/** What a step was given: a call's request, an invoked run's body, or its message headers. */
function stepInput(s: RunStep): Children {
  if (s.callUrl !== undefined) {
    return (
      <>
        <Pre value={`${s.callMethod ?? "GET"} ${s.callUrl}`} />
        <HeaderList headers={s.callHeaders} />
        <Pre value={s.callBody ?? "(no body)"} />
      </>
    );
  }
  if (s.invokedWorkflowRunId !== undefined) return <Pre value={s.invokedWorkflowRunBody} />;
  return <HeaderList headers={s.headers} />;
}

function StepItem(p: { s: TimelineStep }) {
  const { s } = p;
  const name = s.stepName ?? (s.group === "next" ? "(next)" : "");
  const took =
    s.createdAt !== undefined && s.previousAt !== undefined
      ? fmtDuration(Math.max(0, s.createdAt - s.previousAt))
      : undefined;
  const output = s.callResponseStatus !== undefined ? s.callResponseBody : s.out;
  return (
    <li class={`step ${s.state.toLowerCase()}`} data-step={name}>
      <div class="step-head">
        <strong class="step-name">{name}</strong>
        <span class="step-type">
          {s.stepType ?? ""}
          {s.group === "parallel" ? " ∥ parallel" : ""}
        </span>
        <Badge text={s.state} />
        <span class="nowrap">{s.createdAt !== undefined ? fmtTime(s.createdAt) : ""}</span>
        {took && (
          <span class="hint" title="time since the step before ended">
            +{took}
          </span>
        )}
        <span class="hint">
          retries {s.retries ?? "—"}
          {s.errors && s.errors.length > 0 ? `, ${s.errors.length} failed attempts` : ""}
        </span>
        {s.messageId && (
          <a href={href.message(s.messageId)} class="hint">
            message
          </a>
        )}
      </div>
      {s.callResponseStatus !== undefined && (
        <div class="hint">call answered HTTP {s.callResponseStatus}</div>
      )}
      {s.group !== "next" && (
        <details>
          <summary>Input</summary>
          {stepInput(s)}
        </details>
      )}
      {output !== undefined && (
        <details>
          <summary>Output</summary>
          <Pre value={output} />
        </details>
      )}
      {s.errors && s.errors.length > 0 && (
        <details>
          <summary>Errors</summary>
          <Pre value={s.errors} />
        </details>
      )}
    </li>
  );
}
