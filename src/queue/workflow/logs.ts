import type { Reply } from "../../shared/redis/resp.js";
import type { Handler, QueueContext } from "../routes/context.js";
import { countParam, reply } from "../routes/util.js";
import type { StoredMessage } from "../store/message-store.js";
import { queueKeys as Q } from "../store/keys.js";
import type { RunRecord, StepEntry } from "./run.js";
import { matchesRun, runFilterFromQuery, scanRuns } from "./scan.js";
import { asArray, asText, checked } from "../store/replies.js";

type Json = Record<string, unknown>;
type Group = { type: "sequential" | "parallel" | "next"; steps: Json[] };

/**
 * GET /v2/workflows/events?groupBy=workflowRunId (docs/workflow.md §12): runs newest first with
 * their steps, `count` per page (default 10, at most 100) and an opaque cursor, omitted on the
 * last page.
 */
export const listRunLogs: Handler = async (ctx, r) => {
  const filter = runFilterFromQuery(r.query, ["groupBy", "cursor", "count", "messageId"]);
  const messageId = r.query.get("messageId") ?? undefined;
  const keep = async (run: RunRecord) =>
    matchesRun(filter, run) &&
    (messageId === undefined ||
      (await ctx.workflows.entries(run.runId)).some((e) => e.includes(`"${messageId}"`)));
  const page = await scanRuns(ctx, keep, countParam(r.query, 10, 100), r.query.get("cursor"));
  const runs = await Promise.all(page.runs.map((run) => runLog(ctx, run)));
  reply(r.res, 200, page.cursor ? { cursor: page.cursor, runs } : { runs });
};

async function runLog(ctx: QueueContext, run: RunRecord): Promise<Json> {
  const entries = (await ctx.workflows.entries(run.runId)).map((e) => JSON.parse(e) as StepEntry);
  const groups = stepGroups(run, entries);
  const next = await nextGroup(ctx, run);
  if (next.steps.length > 0) groups.push(next);
  const f = run.failure;
  return {
    workflowRunId: run.runId,
    workflowUrl: run.url,
    workflowState: run.state,
    workflowRunCreatedAt: run.createdAt,
    ...(run.completedAt ? { workflowRunCompletedAt: run.completedAt } : {}),
    ...(run.response !== undefined ? { workflowRunResponse: run.response } : {}),
    ...(run.config.labels ? { label: run.config.labels[0] } : {}),
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
    ...(f
      ? {
          failureFunction: {
            messageId: f.messageId,
            url: run.config.failureCallback,
            state: f.state,
            dlqId: run.dlqId,
            ...(f.responseStatus !== undefined
              ? {
                  responseStatus: f.responseStatus,
                  responseBody: f.responseBody,
                  responseHeaders: f.responseHeaders,
                }
              : {}),
          },
        }
      : {}),
    steps: groups,
  };
}

const decode = (b64: string): string => Buffer.from(b64, "base64").toString("utf8");

/** Completed steps in list order: the init step, then results (plans and calls left out). */
function stepGroups(run: RunRecord, entries: StepEntry[]): Group[] {
  const [init, ...rest] = entries;
  const groups: Group[] = [];
  if (init) {
    const step = { stepName: "init", stepType: "Initial", out: decode(init.body), concurrent: 1 };
    groups.push({ type: "sequential", steps: [stepLog(run, init, step)] });
  }
  const seen = new Set<number>();
  let open: Group | undefined;
  for (const e of rest) {
    if (e.callType !== "step") continue;
    const step = parseStep(e.body);
    const id = Number(step["stepId"] ?? 0);
    if (id === 0 || seen.has(id)) continue;
    seen.add(id);
    const concurrent = Number(step["concurrent"] ?? 1);
    const log = stepLog(run, e, step);
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

function parseStep(b64: string): Json {
  try {
    const v = JSON.parse(decode(b64)) as unknown;
    return typeof v === "object" && v !== null ? (v as Json) : {};
  } catch {
    return {};
  }
}

function stepLog(run: RunRecord, e: StepEntry, step: Json): Json {
  return {
    ...step,
    messageId: e.messageId,
    callType: e.callType,
    state: "STEP_SUCCESS",
    retries: run.config.maxRetries,
    headers: run.config.header,
  };
}

/** The run's messages not completed yet (or the failed one), as the last group. */
async function nextGroup(ctx: QueueContext, run: RunRecord): Promise<Group> {
  if (run.state === "RUN_FAILED" && run.dlqId) {
    const e = await ctx.dlq.get(run.dlqId);
    if (!e) return { type: "next", steps: [] };
    const error = {
      error: run.error ?? "",
      status: e.meta.responseStatus,
      headers: e.meta.responseHeader,
      body: e.meta.responseBodyBase64,
      time: e.meta.failedAt,
    };
    const step = { messageId: e.meta.messageId, state: "STEP_FAILED", retries: e.meta.maxRetries };
    return { type: "next", steps: [{ ...step, errors: [error] }] };
  }
  if (run.state !== "RUN_STARTED") return { type: "next", steps: [] };
  const reply = await ctx.workflows.pool.exec(["SMEMBERS", Q.workflowMessages(run.runId)]);
  const ids = asArray(checked(reply, "run messages")).map((x: Reply) => asText(x) ?? "");
  const live = await ctx.messages.getMany(ids);
  return { type: "next", steps: live.map(pendingStep) };
}

function pendingStep(m: StoredMessage): Json {
  return {
    messageId: m.meta.messageId,
    state: m.state === "RETRY" || m.retried > 0 ? "STEP_RETRY" : "STEP_PROGRESS",
    retries: m.meta.maxRetries,
    ...(m.meta.retryDelayExpression ? { retryDelay: m.meta.retryDelayExpression } : {}),
  };
}
