import { AppError, isAppError } from "../../../shared/errors.js";
import { parseDuration } from "../../domain/duration.js";
import type { Handler, QueueContext, QueueRequest } from "../../routes/context.js";
import { decode, readRaw, reply } from "../../routes/util.js";
import { jsonObject } from "../engine/invoke.js";
import { IN } from "../engine/protocol.js";
import { publishServerStep, serverStep } from "../engine/produce.js";

/** A registered wait (docs/workflow.md §8), kept as JSON in the event's waiter hash. */
interface Waiter {
  /** Id of the wait's timeout message: whoever releases the wait must name it. */
  token: string;
  url: string;
  /** Unix seconds. */
  deadline: number;
  timeout: string;
  headers: Record<string, string[]>;
  timeoutUrl: string;
  timeoutHeaders: Record<string, string[]>;
  timeoutBody?: unknown;
  step: Record<string, unknown>;
}

const DEFAULT_TIMEOUT = "7d";

/** The request's publish headers (`Upstash-*`, Content-Type) as name -> values; no credentials. */
function publishHeaders(r: QueueRequest): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(r.req.headers)) {
    if (value === undefined || !(name.startsWith("upstash-") || name === "content-type")) continue;
    out[name] = Array.isArray(value) ? value : [value];
  }
  return out;
}

function parseWaitBody(
  raw: Buffer,
  maxValues: number,
): Omit<Waiter, "token" | "deadline" | "headers"> {
  const o = jsonObject(raw, "a wait body", maxValues);
  const { url, step } = o;
  if (typeof url !== "string" || typeof step !== "object" || step === null) {
    throw new AppError("bad_request", "wait body needs url and step");
  }
  const timeout = typeof o["timeout"] === "string" ? o["timeout"] : DEFAULT_TIMEOUT;
  const timeoutHeaders = o["timeoutHeaders"];
  return {
    url,
    timeout,
    timeoutUrl: typeof o["timeoutUrl"] === "string" ? o["timeoutUrl"] : url,
    timeoutHeaders: (typeof timeoutHeaders === "object" && timeoutHeaders !== null
      ? timeoutHeaders
      : {}) as Record<string, string[]>,
    timeoutBody: o["timeoutBody"],
    step: step as Record<string, unknown>,
  };
}

/** The step that ends a wait: with the event's data (base64), or as a timeout. */
function waitResult(w: Waiter, eventId: string, data: string | undefined, timedOut: boolean) {
  return {
    ...w.step,
    ...(data ? { out: data } : {}),
    waitEventId: eventId,
    timeout: w.timeout,
    // For the logs' waitTimeoutDeadline (ms); the SDK ignores fields it does not know.
    waitTimeoutDeadline: w.deadline * 1000,
    waitTimeout: timedOut,
  };
}

function renderWaiter(w: Waiter): Record<string, unknown> {
  return {
    url: w.url,
    deadline: w.deadline,
    headers: w.headers,
    timeoutUrl: w.timeoutUrl,
    timeoutBody: w.timeoutBody,
    timeoutHeaders: w.timeoutHeaders,
  };
}

/**
 * POST /v2/wait/{eventId} (docs/workflow.md §8): registers the wait with its timeout message,
 * or ends it at once with a notification kept for this run. 400 when the run is not active.
 */
export const waitForEvent: Handler = async (ctx, r) => {
  const eventId = decode(r.segments[1] ?? "");
  const runId = String(r.req.headers[IN.runId] ?? "");
  const body = parseWaitBody(await readRaw(ctx, r), ctx.config.queueMaxJsonValues);
  const now = Date.now();
  const deadlineMs = now + parseDuration(body.timeout, "timeout");
  const headers = publishHeaders(r);
  const draft: Waiter = { ...body, token: "", deadline: Math.floor(deadlineMs / 1000), headers };
  const t = await serverStep(
    ctx,
    runId,
    body.timeoutUrl,
    body.timeoutHeaders,
    waitResult(draft, eventId, undefined, true),
    { dueAt: deadlineMs, eventId },
  );
  const waiter: Waiter = { ...draft, token: t.append.id };
  const message = t.append.message;
  if (!message) throw new AppError("internal", "wait without a timeout message");
  // What a notification will make (release): its flow-control key is made, or refused, now.
  const notified = await serverStep(ctx, runId, waiter.url, headers, draft.step);
  const result = await ctx.workflows.wait(
    now,
    runId,
    eventId,
    JSON.stringify(waiter),
    message,
    notified.append.message,
  );
  if (result === "ended") throw new AppError("bad_request", `workflow run ${runId} has ended`);
  if (result === "registered") ctx.dispatcher.wake(deadlineMs);
  else {
    const step = waitResult(waiter, eventId, result.kept || undefined, false);
    await publishServerStep(ctx, runId, waiter.url, headers, step);
  }
  reply(r.res, 200, { messageId: waiter.token });
};

/**
 * Ends one run's wait with the event's data; the notify answer element, or undefined when the
 * wait was ended meanwhile by someone else (or the run has ended).
 */
async function release(
  ctx: QueueContext,
  runId: string,
  eventId: string,
  waiter: Waiter,
  data: string | undefined,
): Promise<Record<string, unknown> | undefined> {
  const step = waitResult(waiter, eventId, data, false);
  let made;
  try {
    made = await serverStep(ctx, runId, waiter.url, waiter.headers, step);
  } catch (err) {
    if (isAppError(err) && err.status < 500) return undefined;
    throw err;
  }
  const now = Date.now();
  const outcome = await ctx.workflows.release(now, runId, eventId, waiter.token, made.append);
  if (outcome !== "released") return undefined;
  await ctx.messages.cancel(now, [waiter.token]);
  ctx.dispatcher.wake(made.dueAt);
  return {
    waiter: renderWaiter(waiter),
    messageId: made.append.id,
    deduplicated: false,
    error: "",
    workflowRunId: runId,
    workflowCreatedAt: await ctx.workflows.createdAt(runId),
  };
}

/** Event data as the wait result carries it: base64 of the bytes, undefined when empty. */
const eventData = (raw: Buffer): string | undefined =>
  raw.length === 0 ? undefined : raw.toString("base64");

/** POST /v2/notify/{eventId}: releases every run waiting for the event (none kept). */
export const notifyEvent: Handler = async (ctx, r) => {
  const eventId = decode(r.segments[1] ?? "");
  const data = eventData(await readRaw(ctx, r));
  const out = [];
  for await (const page of ctx.workflows.waiters(eventId)) {
    for (const [runId, json] of page) {
      const released = await release(ctx, runId, eventId, JSON.parse(json) as Waiter, data);
      if (released) out.push(released);
    }
  }
  reply(r.res, 200, out);
};

/**
 * A notification for one run (notify by run, a webhook call): released into the run's wait,
 * or kept for its next wait on the event. "ended" when the run is not active.
 */
async function notifyRun(
  ctx: QueueContext,
  runId: string,
  eventId: string,
  data: string | undefined,
): Promise<"ended" | Record<string, unknown>[]> {
  // A wait released by someone else between the two steps: try again (it is then kept).
  for (let tries = 0; tries < 3; tries++) {
    const kept = await ctx.workflows.keep(runId, eventId, data ?? "");
    if (kept === "ended") return "ended";
    if (kept === "kept") return [];
    if (kept === "full") {
      throw new AppError("precondition_failed", "too many notifications kept for this wait");
    }
    const released = await release(ctx, runId, eventId, JSON.parse(kept.waiter) as Waiter, data);
    if (released) return [released];
  }
  return [];
}

/** POST /v2/notify/{workflowRunId}/{eventId}: `[]` also for unknown or ended runs. */
export const notifyOneRun: Handler = async (ctx, r) => {
  const runId = decode(r.segments[1] ?? "");
  const eventId = decode(r.segments[2] ?? "");
  const result = await notifyRun(ctx, runId, eventId, eventData(await readRaw(ctx, r)));
  reply(r.res, 200, result === "ended" ? [] : result);
};

/** GET /v2/waiters/{eventId}: the waits of active runs. */
export const getWaiters: Handler = async (ctx, r) => {
  const eventId = decode(r.segments[1] ?? "");
  const out = [];
  const seen = new Set<string>();
  for await (const page of ctx.workflows.waiters(eventId)) {
    for (const [runId, json] of page) {
      const run = seen.has(runId) ? undefined : await ctx.workflows.config(runId);
      seen.add(runId);
      if (run?.state === "RUN_STARTED") out.push(renderWaiter(JSON.parse(json) as Waiter));
    }
  }
  reply(r.res, 200, out);
};

/**
 * Largest webhook body: half the message size, since the event carries it base64-encoded inside
 * base64-encoded JSON (about 1.8 times its size) and it must still fit a step of the run.
 */
export function webhookBodyLimit(ctx: QueueContext): number {
  return Math.floor(ctx.config.queueMaxMessageBytes / 2);
}

/**
 * Any method on /v2/workflows/hooks/{userId}/{workflowRunId}/{eventId}, without a token
 * (docs/workflow.md §8): the call becomes an event for the run. 404 for unknown or ended runs.
 */
export const webhook: Handler = async (ctx, r) => {
  const runId = decode(r.segments[3] ?? "");
  const eventId = decode(r.segments[4] ?? "");
  // Anyone may call this path: nothing of the body is read before the run is known to be active
  // and the body's declared size fits (readRaw then reads at most the limit).
  const run = await ctx.workflows.config(runId);
  if (run?.state !== "RUN_STARTED")
    throw new AppError("not_found", `workflow run ${runId} not found`);
  const body = await readRaw(ctx, r, webhookBodyLimit(ctx));
  const header: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(r.req.headers)) {
    if (value !== undefined) header[name] = Array.isArray(value) ? value : [value];
  }
  const call = {
    method: r.method,
    header,
    ...(body.length > 0 ? { body: body.toString("base64") } : {}),
    proto: "http",
    host: r.req.headers.host ?? "",
    url: r.req.url ?? "",
  };
  const data = Buffer.from(JSON.stringify(call)).toString("base64");
  const result = await notifyRun(ctx, runId, eventId, data);
  if (result === "ended") throw new AppError("not_found", `workflow run ${runId} not found`);
  reply(r.res, 200, {});
};
