import type { FlowControl } from "../../domain/flow-control-config.js";
import type {
  CallbackOptions,
  Headers,
  MessageMeta,
  Redaction,
  WorkflowTag,
} from "../../domain/message.js";

/** Run states as the logs API names them (docs/workflow.md §3). */
export type RunState = "RUN_STARTED" | "RUN_SUCCESS" | "RUN_FAILED" | "RUN_CANCELED";

/**
 * The configuration given on a run's trigger message that applies to every later message of the
 * run (the SDK's `WF_TriggerOnConfig`, docs/workflow.md §4).
 */
export interface RunConfig {
  /** Forwarded headers of the trigger (user headers, label, protocol version), no Content-Type. */
  header: Headers;
  maxRetries: number;
  retryDelayExpression?: string | undefined;
  flowControl?: FlowControl | undefined;
  failureCallback?: string | undefined;
  failureCallbackHeader?: Headers | undefined;
  failureCallbackOptions?: CallbackOptions | undefined;
  labels?: string[] | undefined;
  redact?: Redaction | undefined;
  /** The trigger declared no `WF_DetectTrigger` (docs/workflow.md §15); every message inherits it. */
  legacySdk?: true | undefined;
}

/** The run that invoked this one with `context.invoke` (docs/workflow.md §10). */
export interface Invoker {
  workflowRunId: string;
  workflowUrl: string;
  workflowRunCreatedAt: number;
  /** The invoker's publish headers, name -> values, used to publish the result back. */
  headers: Record<string, string[]>;
  /** The invoker's Invoke step, echoed in the result step. */
  step: Record<string, unknown>;
}

/** Outcome of the failure callback (docs/workflow.md §7). */
export interface FailureOutcome {
  state: "CALLBACK_INPROGRESS" | "CALLBACK_SUCCESS" | "CALLBACK_FAIL" | "CALLBACK_CANCELED";
  messageId?: string | undefined;
  responseStatus?: number | undefined;
  responseBody?: string | undefined;
  responseHeaders?: Headers | undefined;
}

export interface RunRecord {
  runId: string;
  state: RunState;
  createdAt: number;
  completedAt?: number | undefined;
  url: string;
  /** Id of the trigger message (entry 0 of the step list). */
  initId: string;
  config: RunConfig;
  /** The initial payload, raw bytes. */
  body: Buffer;
  callerIp?: string | undefined;
  /** The route function's return value as sent on DELETE (a string). */
  response?: string | undefined;
  dlqId?: string | undefined;
  /** Why the run failed (the failed step's error), for the logs. */
  error?: string | undefined;
  invoker?: Invoker | undefined;
  failure?: FailureOutcome | undefined;
  /** Ids of the messages the run's cancel ended (logs: STEP_CANCELED). */
  canceled?: string[] | undefined;
}

/** One element of the step array delivered to the endpoint (docs/workflow.md §5). */
export interface StepEntry {
  messageId: string;
  /** Standard base64 of the message body. */
  body: string;
  callType: string;
}

export const stepEntry = (messageId: string, body: Buffer, callType: string): string =>
  JSON.stringify({ messageId, body: body.toString("base64"), callType });

/** The run configuration carried by a trigger message's meta. */
export function runConfigOf(meta: MessageMeta): RunConfig {
  const header = { ...meta.header };
  delete header["Content-Type"];
  return {
    header,
    maxRetries: meta.maxRetries,
    retryDelayExpression: meta.retryDelayExpression,
    flowControl: meta.flowControl,
    failureCallback: meta.failureCallback,
    failureCallbackHeader: meta.failureCallbackHeader,
    failureCallbackOptions: meta.failureCallbackOptions,
    labels: meta.labels,
    redact: meta.redact,
    ...(meta.workflow?.legacySdk && { legacySdk: true }),
  };
}

/** The tag of a message of a run with configuration `run`. */
export const runTag = (runId: string, callType: string, run: RunConfig): WorkflowTag => ({
  runId,
  callType,
  ...(run.legacySdk && { legacySdk: true }),
});

/**
 * A later step message with the run's configuration applied (docs/workflow.md §4): the run's
 * retries, retry delay, flow control, failure callback, labels and forwarded headers, except
 * where the publish itself set them (`given` holds the lower-case config names it carried).
 */
export function withRunConfig(
  meta: MessageMeta,
  run: RunConfig,
  given: (name: string) => boolean,
  tag: WorkflowTag,
): MessageMeta {
  const pick = <T>(name: string, own: T, fromRun: T): T => (given(name) ? own : fromRun);
  return {
    ...meta,
    header: { ...run.header, ...meta.header },
    maxRetries: pick("upstash-retries", meta.maxRetries, run.maxRetries),
    retryDelayExpression: pick(
      "upstash-retry-delay",
      meta.retryDelayExpression,
      run.retryDelayExpression,
    ),
    flowControl: pick("upstash-flow-control-key", meta.flowControl, run.flowControl),
    failureCallback: run.failureCallback,
    failureCallbackHeader: run.failureCallbackHeader,
    failureCallbackOptions: run.failureCallbackOptions,
    labels: meta.labels ?? run.labels,
    redact: meta.redact ?? run.redact,
    workflow: tag,
  };
}

/**
 * A context.call request (docs/workflow.md §9): its own retries and headers go to the third
 * party; the callback that comes back to the endpoint gets the run's retries and headers.
 */
export function withRunCallbackConfig(
  meta: MessageMeta,
  run: RunConfig,
  given: (name: string) => boolean,
  tag: WorkflowTag,
): MessageMeta {
  const opts = meta.callbackOptions ?? {};
  return {
    ...meta,
    callbackHeader: { ...run.header, ...meta.callbackHeader },
    callbackOptions: {
      ...opts,
      retries: given("upstash-callback-retries") ? opts.retries : run.maxRetries,
      retryDelayExpression: opts.retryDelayExpression ?? run.retryDelayExpression,
    },
    labels: meta.labels ?? run.labels,
    workflow: tag,
  };
}
