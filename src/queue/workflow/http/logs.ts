import type { Headers } from "../../domain/message.js";
import { bodyFields, redactHeaders } from "../../domain/render.js";
import type { Handler, QueueContext } from "../../routes/context.js";
import { countParam, reply } from "../../routes/util.js";
import type { DlqEntry } from "../../store/dlq-store.js";
import type { StoredMessage } from "../../store/message-store.js";
import type { RunRecord, StepEntry } from "../state/run.js";
import {
  callbackStepId,
  callFields,
  failureFunctionLog,
  invokeFields,
  runFields,
  stepOfMessage,
  waitFields,
} from "./log-fields.js";
import { matchesRun, runFilterFromQuery, scanRuns } from "./scan.js";
import type { StepError, StepInfo, StepRecords } from "../state/step-records.js";

type Json = Record<string, unknown>;
type Group = { type: "sequential" | "parallel" | "next"; steps: Json[] };
type Records = StepRecords;

/**
 * GET /v2/workflows/events?groupBy=workflowRunId (docs/workflow.md §12): runs newest first with
 * their steps, `count` per page (default 10, at most 100) and an opaque cursor, omitted on the
 * last page.
 */
export const listRunLogs: Handler = async (ctx, r) => {
  const filter = runFilterFromQuery(r.query, ["groupBy", "cursor", "count", "messageId"]);
  // The logs match `workflowUrl` exactly, as the SDK and Upstash's REST docs say, unless asked
  // for a prefix with `workflowUrlExactMatch=false` (the console does) (§12).
  filter.urlExact = r.query.get("workflowUrlExactMatch") !== "false";
  const messageId = r.query.get("messageId") ?? undefined;
  const keep = async (run: RunRecord) =>
    matchesRun(filter, run) &&
    (messageId === undefined ||
      (await ctx.workflows.entries(run.runId)).some((e) => e.includes(`"${messageId}"`)));
  const page = await scanRuns(
    ctx,
    keep,
    countParam(r.query, 10, 100),
    r.query.get("cursor"),
    ctx.config.queuePageMaxScanned,
  );
  // A run's log carries its step bodies (up to the message size each): the page ends, with a
  // cursor after its last run, once its logs pass STASHD_QUEUE_PAGE_MAX_BYTES (one run at least).
  const runs: Json[] = [];
  let bytes = 0;
  let cursor = page.cursor;
  for (const [i, run] of page.runs.entries()) {
    const log = await runLog(ctx, run);
    runs.push(log);
    bytes += Buffer.byteLength(JSON.stringify(log));
    if (bytes >= ctx.config.queuePageMaxBytes && i < page.runs.length - 1) {
      cursor = `${run.createdAt}:${run.runId}`;
      break;
    }
  }
  reply(r.res, 200, cursor ? { cursor, runs } : { runs });
};

async function runLog(ctx: QueueContext, run: RunRecord): Promise<Json> {
  const entries = (await ctx.workflows.entries(run.runId)).map((e) => JSON.parse(e) as StepEntry);
  const records = await ctx.workflows.records(run.runId);
  const groups = await withStepFields(ctx, stepGroups(run, entries, records));
  const failed = run.dlqId ? await ctx.dlq.get(run.dlqId) : undefined;
  const next = await nextGroup(ctx, run, { entries, records }, failed);
  if (next.steps.length > 0) groups.push(next);
  const failureFunction = await failureFunctionLog(ctx, run, failed);
  return {
    workflowRunId: run.runId,
    workflowUrl: run.url,
    workflowState: run.state,
    workflowRunCreatedAt: run.createdAt,
    ...(run.completedAt ? { workflowRunCompletedAt: run.completedAt } : {}),
    ...(run.response !== undefined ? { workflowRunResponse: run.response } : {}),
    ...runFields(run),
    ...(run.dlqId ? { dlqId: run.dlqId } : {}),
    ...(run.invoker
      ? {
          invoker: {
            workflowRunId: run.invoker.workflowRunId,
            workflowUrl: run.invoker.workflowUrl,
            workflowRunCreatedAt: run.invoker.workflowRunCreatedAt,
          },
        }
      : {}),
    ...(failureFunction ? { failureFunction } : {}),
    steps: groups,
  };
}

const decode = (b64: string): string => Buffer.from(b64, "base64").toString("utf8");

/** Completed steps in list order: the init step, then results (plans and calls left out). */
function stepGroups(run: RunRecord, entries: StepEntry[], records: Records): Group[] {
  const [init, ...rest] = entries;
  const groups: Group[] = [];
  if (init) {
    const step = { stepName: "init", stepType: "Initial", out: decode(init.body), concurrent: 1 };
    groups.push({ type: "sequential", steps: [stepLog(run, init, step, records.info)] });
  }
  const seen = new Set<number>();
  let open: Group | undefined;
  const calls = new Map<number | undefined, Json>();
  for (const e of rest) {
    if (e.callType === "fromCallback") {
      calls.set(callbackStepId(records.info.get(e.messageId)), callFields(e));
    }
    if (e.callType !== "step") continue;
    const step = withCall(parseStep(e.body), calls);
    const id = Number(step["stepId"] ?? 0);
    if (id === 0 || seen.has(id)) continue;
    seen.add(id);
    const concurrent = Number(step["concurrent"] ?? 1);
    const log = stepLog(run, e, step, records.info);
    if (concurrent <= 1) {
      groups.push({ type: "sequential", steps: [log] });
      continue;
    }
    if (!open || open.steps.length >= concurrent) {
      open = { type: "parallel", steps: [] };
      groups.push(open);
    }
    open.steps.push(log);
  }
  return groups;
}

/** A Call step with the request and response of the call it ran (its latest callback). */
function withCall(step: Json, calls: Map<number | undefined, Json>): Json {
  if (step["stepType"] !== "Call") return step;
  const id = Number(step["stepId"] ?? 0);
  const call = calls.get(id) ?? calls.get(undefined) ?? {};
  return { ...step, ...call };
}

/** Wait and invoke steps with the fields the log types name for them (log-fields.ts). */
async function withStepFields(ctx: QueueContext, groups: Group[]): Promise<Group[]> {
  for (const g of groups) {
    g.steps = await Promise.all(
      g.steps.map(async (s) => ({ ...s, ...waitFields(s), ...(await invokeFields(ctx, s)) })),
    );
  }
  return groups;
}

function parseStep(b64: string): Json {
  try {
    const v = JSON.parse(decode(b64)) as unknown;
    return typeof v === "object" && v !== null ? (v as Json) : {};
  } catch {
    return {};
  }
}

/**
 * A completed step: the entry's step fields with what its message recorded when it joined the
 * run (the run's trigger configuration for entries recorded without it), redacted as the
 * trigger's `Upstash-Redact-Fields` asked.
 */
function stepLog(run: RunRecord, e: StepEntry, step: Json, infos: Map<string, StepInfo>): Json {
  const info = infos.get(e.messageId);
  return redacted(run, {
    ...step,
    messageId: e.messageId,
    callType: e.callType,
    state: "STEP_SUCCESS",
    createdAt: info?.createdAt ?? run.createdAt,
    retries: info?.retries ?? run.config.maxRetries,
    ...retryDelay(info ? info.retryDelay : run.config.retryDelayExpression),
    headers: info?.headers ?? run.config.header,
  });
}

/**
 * A step log with the run's redaction applied (docs/workflow.md §12): `body` hides what the
 * steps carried (`out`, a call's body), header redaction the named or all headers the step
 * and its call sent, as `REDACTED:<sha256 hex>` like the queue's own logs.
 */
function redacted(run: RunRecord, log: Json): Json {
  const r = run.config.redact;
  if (!r) return log;
  const out: Json = { ...log };
  for (const name of ["out", "callBody"]) {
    const value = out[name];
    if (!r.body || value === undefined) continue;
    const text = typeof value === "string" ? value : JSON.stringify(value);
    out[name] = bodyFields(Buffer.from(text), true, name)[name];
  }
  for (const name of ["headers", "callHeaders"]) {
    const value = out[name];
    if (typeof value !== "object" || value === null) continue;
    // A call's headers come as the SDK wrote them: values may be strings or arrays.
    const lists = Object.entries(value as Json).map(([k, v]) => [k, [v].flat().map(String)]);
    out[name] = redactHeaders(Object.fromEntries(lists) as Headers, r);
  }
  return out;
}

const retryDelay = (expression: string | undefined) =>
  expression !== undefined ? { retryDelay: expression } : {};

/** The failed attempts of a message as the logs show them (no message id). */
const attemptErrors = (records: Records, messageId: string): Json[] =>
  (records.errors.get(messageId) ?? []).map(({ messageId: _, ...e }: StepError) => e);

/** What the `next` group is read from: the run's entries and its messages' records. */
interface RunRecords {
  entries: StepEntry[];
  records: Records;
}

/** The run's messages not completed yet (or the failed or cancelled ones), as the last group. */
async function nextGroup(
  ctx: QueueContext,
  run: RunRecord,
  rr: RunRecords,
  failed: DlqEntry | undefined,
): Promise<Group> {
  const { records } = rr;
  if (run.state === "RUN_FAILED" && run.dlqId) {
    if (!failed) return { type: "next", steps: [] };
    const errors = attemptErrors(records, failed.meta.messageId);
    const step = {
      messageId: failed.meta.messageId,
      ...stepOf(rr, failed.meta.messageId, errors),
      state: "STEP_FAILED",
      retries: failed.meta.maxRetries,
      ...retryDelay(failed.meta.retryDelayExpression),
    };
    return { type: "next", steps: [{ ...step, errors }] };
  }
  if (run.state === "RUN_CANCELED") {
    const steps = (run.canceled ?? []).map((id) => canceledStep(run, id, rr));
    return { type: "next", steps };
  }
  if (run.state !== "RUN_STARTED") return { type: "next", steps: [] };
  const live = await ctx.messages.getMany(await ctx.workflows.messageIds(run.runId));
  const due = await ctx.messages.dueTimes(live.map((m) => m.meta.messageId));
  return { type: "next", steps: live.map((m, i) => pendingStep(m, rr, due[i])) };
}

/** The id, name and type of the step message `messageId` runs, as far as they are known. */
const stepOf = (rr: RunRecords, messageId: string, errors: Json[]): Json =>
  stepOfMessage(
    rr.entries,
    messageId,
    rr.records.info.get(messageId),
    errors as unknown as StepError[],
  );

function canceledStep(run: RunRecord, messageId: string, rr: RunRecords): Json {
  const info = rr.records.info.get(messageId);
  const errors = attemptErrors(rr.records, messageId);
  return {
    messageId,
    ...stepOf(rr, messageId, errors),
    state: "STEP_CANCELED",
    retries: info?.retries ?? run.config.maxRetries,
    ...retryDelay(info ? info.retryDelay : run.config.retryDelayExpression),
    errors,
  };
}

function pendingStep(m: StoredMessage, rr: RunRecords, due: number | undefined): Json {
  const errors = attemptErrors(rr.records, m.meta.messageId);
  const retrying = m.state === "RETRY" || m.retried > 0 || errors.length > 0;
  return {
    messageId: m.meta.messageId,
    ...stepOf(rr, m.meta.messageId, errors),
    state: retrying ? "STEP_RETRY" : "STEP_PROGRESS",
    ...(due !== undefined ? { nextDeliveryTime: due } : {}),
    retries: m.meta.maxRetries,
    ...retryDelay(m.meta.retryDelayExpression),
    ...(retrying ? { errors } : {}),
  };
}
