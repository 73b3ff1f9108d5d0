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

/** The step name the endpoint reported on its latest failed answer (`Upstash-Error-Step-Name`). */
export function reportedStepName(errors: readonly StepError[]): string | undefined {
  for (let i = errors.length - 1; i >= 0; i--) {
    const headers = errors[i]?.headers ?? {};
    for (const [name, values] of Object.entries(headers)) {
      if (name.toLowerCase() === ERROR_STEP_NAME && values[0]) return values[0];
    }
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
  for (const [name, values] of Object.entries(info?.headers ?? {})) {
    if (name.toLowerCase() === "upstash-workflow-stepid") return Number(values[0]);
  }
  return undefined;
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
