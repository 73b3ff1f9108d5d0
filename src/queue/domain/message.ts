/**
 * What the queue stores for each message (the `meta` JSON of its hash; the body is kept apart as
 * raw bytes). Message states (docs/qstash-protocol.md §6.6), each entered by one Lua transition in
 * store/lua:
 *
 *   CREATED (enqueue) -> ACTIVE (claim) -> DELIVERED (finish)
 *                                       -> ERROR, RETRY (finish) -> ACTIVE ...
 *                                       -> ERROR, FAILED (finish; moved to the DLQ)
 *   any waiting state -> CANCEL_REQUESTED, CANCELED (cancel); ACTIVE -> CANCEL_REQUESTED (cancel)
 *   -> CANCELED (finish/reap); an expired lease: ACTIVE -> RETRY (reap)
 */
import type { FlowControl } from "./flow-control-config.js";

export type Headers = Record<string, string[]>;

export const STATES = [
  "CREATED",
  "ACTIVE",
  "RETRY",
  "ERROR",
  "DELIVERED",
  "FAILED",
  "CANCEL_REQUESTED",
  "CANCELED",
] as const;
export type MessageState = (typeof STATES)[number];

/** Per-callback configuration from `Upstash-Callback-*` / `Upstash-Failure-Callback-*`. */
export interface CallbackOptions {
  method?: string | undefined;
  retries?: number | undefined;
  timeoutMs?: number | undefined;
  retryDelayExpression?: string | undefined;
  delayMs?: number | undefined;
}

/** Which fields the API, logs and DLQ show as `REDACTED:<sha256>` (delivery uses real values). */
export interface Redaction {
  body: boolean;
  allHeaders: boolean;
  /** Lower-case header names. */
  headers: string[];
}

export interface MessageMeta {
  messageId: string;
  url: string;
  method: string;
  /** Headers delivered to the destination (forwarded ones and Content-Type), canonical names. */
  header: Headers;
  createdAt: number;
  notBefore: number;
  maxRetries: number;
  /** Per-attempt HTTP timeout. */
  timeoutMs: number;
  retryDelayExpression?: string | undefined;
  callback?: string | undefined;
  callbackHeader?: Headers | undefined;
  callbackOptions?: CallbackOptions | undefined;
  failureCallback?: string | undefined;
  failureCallbackHeader?: Headers | undefined;
  failureCallbackOptions?: CallbackOptions | undefined;
  topicName?: string | undefined;
  endpointName?: string | undefined;
  callerIP?: string | undefined;
  /** Set on messages produced by a schedule (delivered as `Upstash-Schedule-Id`). */
  scheduleId?: string | undefined;
  /** FIFO queue of an enqueued message (and of its callbacks, which hold the queue's slot). */
  queueName?: string | undefined;
  labels?: string[] | undefined;
  redact?: Redaction | undefined;
  /** Flow-control key and config (docs/qstash-protocol.md §3.3); callbacks do not inherit it. */
  flowControl?: FlowControl | undefined;
  /** 0 for a published message, parent depth + 1 for callbacks (bounded by config). */
  depth: number;
  /**
   * Stashd deliveries the publish that made this message arrived on (its `Upstash-Hop`); absent
   * for 0. Deliveries send it plus one, so a destination publishing back cannot loop unbounded.
   */
  hop?: number | undefined;
  /** Set on the messages of a workflow run (docs/workflow.md §2). */
  workflow?: WorkflowTag | undefined;
}

/** How a message takes part in a workflow run (docs/workflow.md §2). */
export interface WorkflowTag {
  runId: string;
  /** `step`, `toCallback` (a context.call request), `fromCallback` (its answer), `failureCall`. */
  callType: string;
  /** On a wait's timeout message: the event waited for (docs/workflow.md §8). */
  waitFor?: string | undefined;
  /** On the trigger message of a run started by POST /v2/trigger (docs/workflow.md §14). */
  restTrigger?: true | undefined;
  /**
   * On the messages of a run whose trigger did not declare `WF_DetectTrigger` in
   * `Upstash-Feature-Set` (the deprecated `@upstash/qstash/workflow` serve): their endpoint
   * answers without `Upstash-Workflow-Sdk-Version`, so no non-workflow check (docs/workflow.md §15).
   */
  legacySdk?: true | undefined;
}

/** The response of the last attempt, kept for callbacks, logs and the DLQ. */
export interface AttemptResult {
  /** 0 when no response arrived (connection error, timeout). */
  status: number;
  header: Headers;
  /** Response body, up to the attempt's read limit (see HttpClient). */
  body: Buffer;
  /** The destination sent more than `body`: the rest was not read. */
  truncated?: boolean | undefined;
  error?: string | undefined;
}

export interface DlqMeta extends MessageMeta {
  dlqId: string;
  failedAt: number;
  responseStatus: number;
  responseHeader: Headers;
  /** Base64 of the last response body, at most STASHD_QUEUE_LOGGED_RESPONSE_BYTES of it. */
  responseBodyBase64: string;
  /** The response body was longer than what is kept. */
  responseBodyTruncated?: boolean | undefined;
}
