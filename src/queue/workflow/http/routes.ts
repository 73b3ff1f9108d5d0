import { AppError } from "../../../shared/errors.js";
import type { Handler, QueueContext, QueueRequest } from "../../routes/context.js";
import { configValues, parseDestination } from "../../routes/publish-request.js";
import { decode, readRaw, reply } from "../../routes/util.js";
import * as dlq from "./dlq.js";
import * as events from "./events.js";
import { endRun } from "../engine/lifecycle.js";
import { listRunLogs } from "./logs.js";
import * as manage from "./manage.js";
import * as recover from "./recover.js";
import * as restApi from "./rest-api.js";
import { produceWorkflow } from "../engine/produce.js";
import { triggerRun } from "./trigger.js";

/** POST /v2/publish/{url} carrying a workflow run id (docs/workflow.md §4, §5). */
export async function publishWorkflow(ctx: QueueContext, r: QueueRequest): Promise<void> {
  const { destination, group } = parseDestination(r);
  const body = await readRaw(ctx, r);
  const [result] = await produceWorkflow(ctx, [
    {
      destination,
      group,
      config: () => configValues(r),
      requestHeaders: r.req.headers,
      body,
      callerIP: r.req.socket.remoteAddress,
    },
  ]);
  reply(r.res, result?.deduplicated ? 202 : 201, result);
}

const runIdOf = (r: QueueRequest): string => decode(r.segments[2] ?? "");

/**
 * GET /v2/workflows/runs/{id}: the run's whole step array (lazy fetch, docs/workflow.md §5);
 * 404 once the run has ended, which the SDK reads as "nothing left to do".
 */
export const getRunSteps: Handler = async (ctx, r) => {
  const runId = runIdOf(r);
  const run = await ctx.workflows.config(runId);
  if (run?.state !== "RUN_STARTED") {
    throw new AppError("not_found", `workflow run ${runId} does not exist or has ended`);
  }
  const entries = await ctx.workflows.entries(runId);
  r.res.writeHead(200, { "content-type": "application/json" }).end(`[${entries.join(",")}]`);
};

/**
 * DELETE /v2/workflows/runs/{id}?cancel=false|true: the route function returned (the body is its
 * JSON return value) or called context.cancel(). Always 200, also for unknown or ended runs
 * (docs/workflow.md §6).
 */
export const deleteRun: Handler = async (ctx, r) => {
  const runId = runIdOf(r);
  const cancel = r.query.get("cancel") === "true";
  const body = (await readRaw(ctx, r)).toString("utf8");
  const ended = cancel
    ? await endRun(ctx, runId, "RUN_CANCELED")
    : await endRun(ctx, runId, "RUN_SUCCESS", body === "" ? {} : { response: body });
  reply(r.res, 200, { cancelled: cancel && ended ? 1 : 0 });
};

/** Route table entries of the workflow API, merged into routes/router.ts. */
export const WORKFLOW_ROUTES: [string, Handler][] = [
  ["POST trigger **", triggerRun],
  ["GET workflows runs *", getRunSteps],
  ["DELETE workflows runs *", deleteRun],
  ["DELETE workflows runs", manage.cancelRuns],
  ["GET workflows events", listRunLogs],
  ["GET workflows logs", listRunLogs],
  ["POST batch trigger", restApi.batchTrigger],
  ["DELETE workflows dlq callback *", restApi.cancelFailureCallback],
  ["GET workflows dlq", dlq.listWorkflowDlq],
  ["GET workflows dlq *", dlq.getWorkflowDlq],
  ["DELETE workflows dlq", dlq.deleteWorkflowDlqMany],
  ["DELETE workflows dlq *", dlq.deleteWorkflowDlq],
  ["POST workflows dlq resume", recover.resumeMany],
  ["POST workflows dlq restart", recover.restartMany],
  ["POST workflows dlq resume *", recover.resumeOne],
  ["POST workflows dlq restart *", recover.restartOne],
  ["POST workflows dlq callback *", recover.retryFailureCallback],
  ["POST wait *", events.waitForEvent],
  ["POST notify *", events.notifyEvent],
  ["POST notify * *", events.notifyOneRun],
  ["GET waiters *", events.getWaiters],
  ...["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"].map((m): [string, Handler] => [
    `${m} workflows hooks * * *`,
    events.webhook,
  ]),
];

/** Webhook URLs are called by third parties without the token (docs/workflow.md §8). */
export const isPublicPath = (path: string): boolean => /^\/v2\/workflows\/hooks\//i.test(path);
