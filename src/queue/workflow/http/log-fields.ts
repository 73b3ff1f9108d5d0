import type { Headers } from "../../domain/message.js";
import type { QueueContext } from "../../routes/context.js";
import type { DlqEntry } from "../../store/dlq-store.js";
import type { RunRecord, StepEntry } from "../state/run.js";
import type { StepError, StepInfo } from "../state/step-records.js";

/**
 * The fields of `@upstash/workflow` 1.3's log types beyond a step's own JSON (docs/workflow.md
 * §12): run labels, caller IP and flow-control key; the failure function's view of the failed
 * step; a call's request and response, a wait's timeout and an invoke's invoked run on their
 * steps; the step name a failing endpoint reported.
 */

type Json = Record<string, unknown>;

/** Header the SDK (1.3) sets on a failing step's answer, naming the step. */
const ERROR_STEP_NAME = "upstash-error-step-name";

const decodeText = (b64: unknown): string =>
  typeof b64 === "string" ? Buffer.from(b64, "base64").toString("utf8") : "";

/** Run-level fields: `labels` (every label of the trigger), caller IP, flow-control key. */
export function runFields(run: RunRecord): Json {
  const labels = run.config.labels;
  const key = run.config.flowControl?.key;
  return {
    ...(labels ? { label: labels[0], labels } : {}),
    ...(run.callerIp ? { workflowRunCallerIp: run.callerIp } : {}),
    ...(key ? { flowControlKey: key } : {}),
  };
}

/**
 * The run's `failureFunction` log: the callback message and its outcome, what the failed step
 * answered (`failStatus`, `failHeaders`, `failResponse`, from the run's DLQ entry), the
 * callback's retries, and `nextDeliveryTime` while it waits to be sent again.
 */
export async function failureFunctionLog(
  ctx: QueueContext,
  run: RunRecord,
  failed: DlqEntry | undefined,
): Promise<Json | undefined> {
  const f = run.failure;
  if (!f) return undefined;
  const due = f.messageId ? (await ctx.messages.dueTimes([f.messageId]))[0] : undefined;
  const m = failed?.meta;
  return {
    messageId: f.messageId,
    url: run.config.failureCallback,
    state: f.state,
    dlqId: run.dlqId,
    maxRetries: run.config.failureCallbackOptions?.retries ?? run.config.maxRetries,
    ...(m
      ? {
          failStatus: m.responseStatus,
          failHeaders: m.responseHeader,
          failResponse: decodeText(m.responseBodyBase64),
        }
      : {}),
    ...(f.responseStatus !== undefined
      ? {
          responseStatus: f.responseStatus,
          responseBody: f.responseBody,
          responseHeaders: f.responseHeaders,
        }
      : {}),
    ...(due !== undefined && f.state === "CALLBACK_INPROGRESS" ? { nextDeliveryTime: due } : {}),
  };
}

/** A header's first value, its name matched case-insensitively. */
function headerValue(headers: Headers | undefined, name: string): string | undefined {
  for (const [key, values] of Object.entries(headers ?? {})) {
    if (key.toLowerCase() === name && values[0] !== undefined) return values[0];
  }
  return undefined;
}

/** The step JSON an entry carries (`{}` when it is not JSON: the init payload, a call body). */
function entryStep(entry: StepEntry): Json {
  try {
    const v = JSON.parse(decodeText(entry.body)) as unknown;
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Json) : {};
  } catch {
    return {};
  }
}

/** The id, name and type of a step, each only when known. */
const named = (id: unknown, name: unknown, type: unknown): Json => ({
  ...(typeof id === "number" && id > 0 ? { stepId: id } : {}),
  ...(typeof name === "string" && name !== "" ? { stepName: name } : {}),
  ...(typeof type === "string" && type !== "" ? { stepType: type } : {}),
});

/**
 * The step an unfinished (or failed, or cancelled) message of the run runs, as far as something
 * recorded names it (docs/workflow.md §12, "the step a next message runs"):
 * - a `fromCallback` message carries its call step's `Upstash-Workflow-StepId/-StepName/-StepType`;
 * - a parallel step's message is its plan step (`targetStep`, `stepName`, `stepType`);
 * - otherwise the endpoint runs the step after the last result the delivery carries (its id is
 *   the highest step id among the run's entries up to this message, plus one), and only a failed
 *   answer's `Upstash-Error-Step-Name` names it (SDK 1.3 sets it when a step's code threw); without
 *   that header nothing is claimed, since the error may have come from code between steps.
 */
export function stepOfMessage(
  entries: readonly StepEntry[],
  messageId: string,
  info: StepInfo | undefined,
  errors: readonly StepError[],
): Json {
  const at = entries.findIndex((e) => e.messageId === messageId);
  const entry = entries[at];
  if (entry?.callType === "fromCallback") {
    const h = info?.headers;
    return named(
      Number(headerValue(h, "upstash-workflow-stepid")),
      headerValue(h, "upstash-workflow-stepname"),
      headerValue(h, "upstash-workflow-steptype"),
    );
  }
  const plan = at > 0 ? stepBody(entry) : {};
  if (typeof plan["targetStep"] === "number" && plan["targetStep"] > 0) {
    return named(plan["targetStep"], plan["stepName"], plan["stepType"]);
  }
  const name = reportedStepName(errors);
  if (name === undefined) return {};
  if (at < 0) return { stepName: name };
  const ids = entries.slice(1, at + 1).map((e) => Number(stepBody(e)["stepId"] ?? 0) || 0);
  return named(Math.max(0, ...ids) + 1, name, undefined);
}

/**
 * The step JSON of a step entry; `{}` for the others, whose bodies are the user's (a call's
 * request) or the queue's (a callback). Callers leave out the first entry, the run's payload.
 */
const stepBody = (entry: StepEntry | undefined): Json =>
  entry?.callType === "step" ? entryStep(entry) : {};

/** The step name the endpoint reported on its latest failed answer (`Upstash-Error-Step-Name`). */
function reportedStepName(errors: readonly StepError[]): string | undefined {
  for (let i = errors.length - 1; i >= 0; i--) {
    const name = headerValue(errors[i]?.headers, ERROR_STEP_NAME);
    if (name) return name;
  }
  return undefined;
}

/** A wait step's fields under the names the log types use. */
export function waitFields(step: Json): Json {
  if (typeof step["waitEventId"] !== "string") return {};
  return {
    waitEventId: step["waitEventId"],
    ...(typeof step["timeout"] === "string" ? { waitTimeoutDuration: step["timeout"] } : {}),
    ...(typeof step["waitTimeoutDeadline"] === "number"
      ? { waitTimeoutDeadline: step["waitTimeoutDeadline"] }
      : {}),
    waitTimeout: step["waitTimeout"] === true,
  };
}

/** The callback JSON a `fromCallback` entry carries, as a call step's log fields. */
export function callFields(entry: StepEntry): Json {
  let cb: Json;
  try {
    cb = JSON.parse(decodeText(entry.body)) as Json;
  } catch {
    return {};
  }
  if (typeof cb !== "object" || cb === null) return {};
  return {
    callUrl: cb["url"],
    callMethod: cb["method"],
    callHeaders: (cb["sourceHeader"] ?? {}) as Headers,
    callBody: decodeText(cb["sourceBody"]),
    callResponseStatus: cb["status"],
    callResponseBody: decodeText(cb["body"]),
    callResponseHeaders: (cb["header"] ?? {}) as Headers,
  };
}

/** The step id a `fromCallback` message was sent back for (its forwarded workflow headers). */
export function callbackStepId(info: StepInfo | undefined): number | undefined {
  const id = headerValue(info?.headers, "upstash-workflow-stepid");
  return id === undefined ? undefined : Number(id);
}

/**
 * An invoke result step's invoked run: id, URL and creation time (written into the step by
 * stashd when the invoked run ended, docs/workflow.md §10), with the invoked run's payload and
 * headers while its record is kept.
 */
export async function invokeFields(ctx: QueueContext, step: Json): Promise<Json> {
  const runId = step["invokedWorkflowRunId"];
  if (typeof runId !== "string") return {};
  const invoked = await ctx.workflows.get(runId);
  return {
    invokedWorkflowRunId: runId,
    invokedWorkflowUrl: step["invokedWorkflowUrl"],
    invokedWorkflowCreatedAt: step["invokedWorkflowCreatedAt"],
    ...(invoked
      ? {
          invokedWorkflowRunBody: invoked.body.toString("utf8"),
          invokedWorkflowRunHeaders: invoked.config.header,
        }
      : {}),
  };
}
