import { AppError, isAppError } from "../../../shared/errors.js";
import { checkDestinations } from "../../delivery/destination-policy.js";
import { buildMeta } from "../../domain/build.js";
import type { MessageMeta, WorkflowTag } from "../../domain/message.js";
import { parsePublishOptions, type PublishOptions } from "../../domain/publish-options.js";
import type { NewMessage } from "../../store/message-store.js";
import type { QueueContext } from "../../routes/context.js";
import type { Submission } from "../../routes/submit.js";
import { parseInvoke } from "./invoke.js";
import { declaresDetectTrigger, IN, type CallType } from "./protocol.js";
import {
  runConfigOf,
  runTag,
  stepEntry,
  withRunCallbackConfig,
  withRunConfig,
} from "../state/run.js";
import type { Append, AppendResult } from "../state/store.js";

/** What a workflow publish answers per message (the plain publish result shape). */
export interface ProduceResult {
  messageId: string;
  url: string;
  deduplicated?: true;
}

/** True when a publish (or batch item) carries a workflow run id: docs/workflow.md §2. */
export const isWorkflowPublish = (headers: Record<string, unknown>): boolean =>
  headers[IN.runId] !== undefined;

/** The same for a raw `/v2/batch` item (header names in any case). */
export function isWorkflowItem(raw: unknown): boolean {
  if (typeof raw !== "object" || raw === null) return false;
  const headers = (raw as Record<string, unknown>)["headers"];
  if (typeof headers !== "object" || headers === null) return false;
  return Object.keys(headers).some((name) => name.toLowerCase() === IN.runId);
}

interface Parsed {
  sub: Submission;
  cfg: Map<string, string>;
  opts: PublishOptions;
  meta: MessageMeta;
  runId: string;
}

/**
 * Stores the workflow messages of one publish or batch (docs/workflow.md §4, §5): a trigger
 * starts its run (or answers `deduplicated` while the run is active); later messages are
 * appended to their run's step list with the run's configuration applied, one atomic append per
 * run so that a batch (a parallel group's plans) keeps its order. A message for an unknown or
 * ended run refuses the whole request with 400; a limit with 412.
 */
export async function produceWorkflow(
  ctx: QueueContext,
  subs: readonly Submission[],
  how: { restTrigger?: boolean } = {},
): Promise<ProduceResult[]> {
  const now = Date.now();
  const parsed = subs.map((s) => parse(ctx, s, now));
  const results: ProduceResult[] = [];
  const later = new Map<string, Append[]>();
  for (const p of parsed) {
    if (p.cfg.get(IN.init) === "true") {
      results.push(await startRun(ctx, p, now, how.restTrigger === true));
      continue;
    }
    const { append } = await laterMessage(ctx, p);
    const appends = later.get(p.runId) ?? [];
    appends.push(append);
    later.set(p.runId, appends);
    results.push({ messageId: p.meta.messageId, url: p.meta.url });
  }
  for (const [runId, appends] of later) {
    const outcome = await appendHandedOff(ctx, now, runId, appends);
    if (outcome === "ended") throw endedRun(runId);
    if (outcome === "full") {
      throw new AppError("precondition_failed", `workflow run ${runId} has too many steps`);
    }
  }
  return results;
}

/**
 * Appends to run `runId` through the dispatcher's local hand-off (Dispatcher.offer): new
 * messages due now are leased to this process in the append itself and delivered at once,
 * exactly as a plain publish's; the others wake the dispatcher at their due time.
 */
async function appendHandedOff(
  ctx: QueueContext,
  now: number,
  runId: string,
  appends: readonly Append[],
): Promise<AppendResult> {
  const messages = appends.flatMap((a) => (a.message ? [a.message] : []));
  const { outcome } = await ctx.dispatcher.offer(messages, now, async (lease) => {
    const appended = await ctx.workflows.append(now, runId, appends, lease);
    return { stored: appended === "ok", outcome: appended };
  });
  return outcome;
}

function parse(ctx: QueueContext, sub: Submission, now: number): Parsed {
  if (sub.group !== undefined) {
    throw new AppError("bad_request", "a workflow message needs a URL destination");
  }
  const cfg = sub.config();
  const runId = cfg.get(IN.runId)?.trim() ?? "";
  if (!/^[\w.-]{1,200}$/.test(runId)) {
    throw new AppError("bad_request", `invalid Upstash-Workflow-RunId: ${JSON.stringify(runId)}`);
  }
  const opts = limitsAre412(cfg.get(IN.init) !== "true", () =>
    parsePublishOptions(cfg, sub.requestHeaders, now, ctx.config),
  );
  checkDestinations(ctx.config, [sub.destination, opts.callback, opts.failureCallback]);
  const meta = buildMeta(opts, { url: sub.destination }, now, sub.callerIP);
  return { sub, cfg, opts, meta, runId };
}

/**
 * A limit exceeded on a later message of a run is a 412, which the SDK turns into a
 * non-retryable failure of the run; a 400 would make it stop silently (docs/workflow.md §5).
 */
function limitsAre412<T>(later: boolean, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (later && isAppError(err) && /exceeds the maximum/.test(err.message)) {
      throw new AppError("precondition_failed", err.message);
    }
    throw err;
  }
}

/**
 * Starts run R with its trigger message, in the partition the run is placed in (its
 * flow-control key's, else its id's; the message gets an id there). `restTrigger`
 * (POST /v2/trigger) tags the trigger message so that its delivery checks the endpoint's SDK
 * version (docs/workflow.md §14). A trigger without `WF_DetectTrigger` in its feature set comes
 * from the deprecated serve, whose answers carry no protocol version: the run is tagged so that
 * no delivery of it checks for one (§15).
 */
async function startRun(
  ctx: QueueContext,
  p: Parsed,
  now: number,
  restTrigger: boolean,
): Promise<ProduceResult> {
  const invoke =
    p.cfg.get(IN.invoke) === "true"
      ? parseInvoke(p.sub.body, ctx.config.queueMaxJsonValues)
      : undefined;
  const payload = invoke ? invoke.body : p.sub.body;
  const tag: WorkflowTag = {
    runId: p.runId,
    callType: "step",
    ...(restTrigger && { restTrigger }),
    ...(!restTrigger && !declaresDetectTrigger(p.cfg.get(IN.featureSet)) && { legacySdk: true }),
  };
  const part = ctx.workflows.placeRun(p.runId, p.meta.flowControl?.key);
  const messageId = ctx.workflows.messageId(part, undefined);
  const meta: MessageMeta = { ...p.meta, messageId, workflow: tag };
  const url = p.cfg.get(IN.url) ?? p.sub.destination;
  const fields: Record<string, string | Buffer> = {
    url,
    config: JSON.stringify(runConfigOf(meta)),
    body: payload,
    ...(p.sub.callerIP ? { callerIp: p.sub.callerIP } : {}),
    ...(invoke ? { invoker: JSON.stringify(invoke.invoker) } : {}),
  };
  const message: NewMessage = { meta, body: payload, dueAt: p.opts.dueAt };
  const entry = stepEntry(meta.messageId, payload, "step");
  const items = [{ id: meta.messageId, entry, message }];
  const started = await ctx.dispatcher.offer([message], now, async (lease) => {
    const reply = await ctx.workflows.start(now, part, p.runId, fields, items, lease);
    return { stored: reply.created, reply };
  });
  if (!started.reply.created) {
    return { messageId: started.reply.firstId, url: meta.url, deduplicated: true };
  }
  return { messageId: meta.messageId, url: meta.url };
}

/** A later message of an active run, with an id in the run's partition. */
async function laterMessage(
  ctx: QueueContext,
  p: Parsed,
): Promise<{ append: Append; dueAt: number }> {
  const run = await ctx.workflows.config(p.runId);
  if (!run || run.state !== "RUN_STARTED") throw endedRun(p.runId);
  const callType = (p.cfg.get(IN.callType) ?? "step") as CallType;
  const tag = runTag(p.runId, callType, run.config);
  const given = (name: string) => p.cfg.has(name);
  const configured =
    callType === "toCallback"
      ? withRunCallbackConfig(p.meta, run.config, given, tag)
      : withRunConfig(p.meta, run.config, given, tag);
  const messageId = ctx.workflows.messageId(run.part, configured.flowControl?.key);
  const meta = { ...configured, messageId };
  const message: NewMessage = { meta, body: p.sub.body, dueAt: p.opts.dueAt };
  const entry = stepEntry(meta.messageId, p.sub.body, callType);
  return { append: { id: meta.messageId, entry, message }, dueAt: p.opts.dueAt };
}

const endedRun = (runId: string) =>
  new AppError("bad_request", `workflow run ${runId} does not exist or has ended`);

/**
 * A step the server makes itself (an invoke result, an event, a wait timeout; docs/workflow.md
 * §8, §10) for run `runId`, delivered to `url` with `headers` read as the headers of a publish
 * and the run's configuration applied. `timeout` makes it a wait's timeout message: due at the
 * deadline and tagged with the event it waits for. Throws 400 when the run is not active.
 */
export async function serverStep(
  ctx: QueueContext,
  runId: string,
  url: string,
  headers: Record<string, string[]>,
  step: Record<string, unknown>,
  timeout?: { dueAt: number; eventId: string },
): Promise<{ append: Append; dueAt: number }> {
  const cfg = new Map<string, string>();
  for (const [name, values] of Object.entries(headers)) {
    const key = name.toLowerCase();
    if (key.startsWith("upstash-") || key === "content-type") cfg.set(key, values.join(","));
  }
  for (const name of [IN.init, IN.callType, IN.invoke, "upstash-delay", "upstash-not-before"]) {
    cfg.delete(name);
  }
  cfg.set(IN.runId, runId);
  const sub: Submission = {
    destination: url,
    config: () => cfg,
    requestHeaders: {},
    body: Buffer.from(JSON.stringify(step)),
    callerIP: undefined,
  };
  const item = await laterMessage(ctx, parse(ctx, sub, Date.now()));
  const message = item.append.message;
  if (!timeout || !message) return item;
  const meta: MessageMeta = {
    ...message.meta,
    notBefore: timeout.dueAt,
    workflow: { ...message.meta.workflow, runId, callType: "step", waitFor: timeout.eventId },
  };
  return {
    append: { ...item.append, message: { ...message, meta, dueAt: timeout.dueAt } },
    dueAt: timeout.dueAt,
  };
}

/** Appends a server-made step (see `serverStep`) to its run; its message id. */
export async function publishServerStep(
  ctx: QueueContext,
  runId: string,
  url: string,
  headers: Record<string, string[]>,
  step: Record<string, unknown>,
): Promise<string> {
  const { append } = await serverStep(ctx, runId, url, headers, step);
  const outcome = await appendHandedOff(ctx, Date.now(), runId, [append]);
  if (outcome !== "ok") throw endedRun(runId);
  return append.id;
}
