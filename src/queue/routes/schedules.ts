import { AppError } from "../../shared/errors.js";
import { newScheduleId } from "../scheduler/schedule-id.js";
import { parseCron } from "../scheduler/cron.js";
import { checkDestinations } from "../delivery/destination-policy.js";
import { parsePublishOptions, type PublishOptions } from "../domain/publish-options.js";
import type { ScheduleDef, ScheduleOptions } from "../store/schedule-store.js";
import type { Handler, QueueRequest } from "./context.js";
import { configValues, parseDestination } from "./publish-request.js";
import { renderSchedules } from "./schedule-render.js";
import { checkQueueName } from "./submit.js";
import { decode, notFound, readRaw, reply, replyArray } from "./util.js";

const ID = /^[A-Za-z0-9_.-]+$/;

/**
 * Configuration a schedule does not pass on to its messages: its own headers, and the ones that
 * make no sense per tick (an absolute not-before; dedup ids, which would drop every tick but the
 * first).
 */
const NOT_PER_MESSAGE = [
  "upstash-cron",
  "upstash-schedule-id",
  "upstash-queue-name",
  "upstash-not-before",
  "upstash-deduplication-id",
  "upstash-content-based-deduplication",
];

/**
 * POST /v2/schedules/{destination} (docs/qstash-protocol.md §2.6): `Upstash-Cron` plus every
 * publish configuration header, parsed (and validated) by parsePublishOptions now and applied to
 * each produced message. An existing `Upstash-Schedule-Id` is replaced. Answers `{"scheduleId"}`.
 */
export const createSchedule: Handler = async (ctx, r) => {
  const { destination, group: groupName } = parseDestination(r);
  const group = groupName === undefined ? undefined : await ctx.topics.get(groupName);
  if (groupName !== undefined && !group) throw notFound("url group");
  const body = await readRaw(ctx, r);
  const cfg = configValues(r, group?.headers);
  const cronRaw = cfg.get("upstash-cron");
  if (cronRaw === undefined || cronRaw.trim() === "") {
    throw new AppError("bad_request", "the Upstash-Cron header is required");
  }
  const queueName = queueNameOf(cfg.get("upstash-queue-name"));
  const scheduleId = scheduleIdOf(cfg.get("upstash-schedule-id"));
  for (const name of NOT_PER_MESSAGE) cfg.delete(name);
  const cron = parseCron(cronRaw);
  const now = ctx.scheduler.now();
  const opts = parsePublishOptions(cfg, r.req.headers, now, ctx.config);
  const urls = group ? group.endpoints.map((e) => e.url) : [destination];
  checkDestinations(ctx.config, [...urls, opts.callback, opts.failureCallback]);
  const def: ScheduleDef = {
    scheduleId,
    cron: cron.text,
    destination,
    group: groupName,
    options: perMessage(opts),
    delayMs: opts.dueAt - now,
    queueName,
    callerIP: r.req.socket.remoteAddress,
    createdAt: now,
  };
  const next = cron.next(now);
  if (next === undefined) throw new AppError("bad_request", "Upstash-Cron never fires");
  await ctx.schedules.save(def, body, next);
  ctx.scheduler.wake();
  reply(r.res, 200, { scheduleId });
};

export const listSchedules: Handler = async (ctx, r) => {
  await replyArray(r.res, 200, await renderSchedules(ctx, await ctx.schedules.list()));
};

export const getSchedule: Handler = async (ctx, r) => {
  const s = await ctx.schedules.get(idParam(r));
  if (!s) throw notFound("schedule");
  reply(r.res, 200, (await renderSchedules(ctx, [s]))[0]);
};

export const deleteSchedule: Handler = async (ctx, r) => {
  if (!(await ctx.schedules.delete(idParam(r)))) throw notFound("schedule");
  reply(r.res, 200);
};

/** PATCH (SDKs) or POST (OAS) /v2/schedules/{id}/pause; idempotent. */
export const pauseSchedule: Handler = async (ctx, r) => {
  if (!(await ctx.schedules.setPaused(idParam(r), true, 0))) throw notFound("schedule");
  reply(r.res, 200);
};

/** .../resume: the schedule continues with the first tick after now (missed ticks are skipped). */
export const resumeSchedule: Handler = async (ctx, r) => {
  const id = idParam(r);
  const s = await ctx.schedules.get(id);
  if (!s) throw notFound("schedule");
  const next = parseCron(s.def.cron).next(ctx.scheduler.now()) ?? Number.MAX_SAFE_INTEGER;
  if (!(await ctx.schedules.setPaused(id, false, next))) throw notFound("schedule");
  ctx.scheduler.wake();
  reply(r.res, 200);
};

function idParam(r: QueueRequest): string {
  return decode(r.segments[1] ?? "");
}

/**
 * `Upstash-Queue-Name` (docs/qstash-protocol.md §2.6); empty means none. The queue is created at
 * the first fire.
 */
function queueNameOf(raw: string | undefined): string | undefined {
  const name = raw?.trim() ?? "";
  return name === "" ? undefined : checkQueueName(name);
}

function scheduleIdOf(raw: string | undefined): string {
  if (raw === undefined || raw.trim() === "") return newScheduleId();
  const id = raw.trim();
  if (!ID.test(id)) {
    throw new AppError(
      "bad_request",
      "invalid Upstash-Schedule-Id: use letters, digits, -, _ or .",
    );
  }
  return id;
}

/** The parsed options each produced message gets (timing and dedup are per tick). */
function perMessage(o: PublishOptions): ScheduleOptions {
  return {
    method: o.method,
    header: o.header,
    maxRetries: o.maxRetries,
    timeoutMs: o.timeoutMs,
    retryDelayExpression: o.retryDelayExpression,
    callback: o.callback,
    callbackHeader: o.callbackHeader,
    callbackOptions: o.callbackOptions,
    failureCallback: o.failureCallback,
    failureCallbackHeader: o.failureCallbackHeader,
    failureCallbackOptions: o.failureCallbackOptions,
    labels: o.labels,
    redact: o.redact,
    flowControl: o.flowControl,
  };
}
