import { messageOf } from "../../../shared/errors.js";
import type { DeliveryHooks, Prepared } from "../../delivery/dispatcher.js";
import type { AttemptResult, DlqMeta, Headers, WorkflowTag } from "../../domain/message.js";
import { isSuccess } from "../../domain/retry-policy.js";
import type { Claimed, NewMessage, Outcome } from "../../store/message-store.js";
import type { QueueContext } from "../../routes/context.js";
import { endRun } from "./lifecycle.js";
import {
  NON_WORKFLOW_DESTINATION,
  OUT,
  PROTOCOL_VERSION,
  REST_TRIGGER_NEEDS_V1,
  SDK_VERSION_HEADER,
} from "./protocol.js";
import { isRunEntry } from "../http/dlq.js";
import { endUnfinishedFailure, failureText } from "./repair.js";
import { stepEntry, type FailureOutcome, type RunRecord } from "../state/run.js";

/**
 * How the dispatcher delivers workflow messages (docs/workflow.md §5-§7): the step array as the
 * body of a step delivery, the run's identity headers, nothing at all for a run that has ended,
 * the non-workflow-destination check, and the run's end when a message of it fails for good.
 */
export class WorkflowDelivery implements DeliveryHooks {
  constructor(private readonly ctx: QueueContext) {}

  /** Nothing to prepare for a message of no run, decided at once (no promise per delivery). */
  prepare(c: Claimed): Promise<Prepared> | undefined {
    const tag = c.meta.workflow;
    return tag ? this.prepareRun(c, tag) : undefined;
  }

  private async prepareRun(c: Claimed, tag: WorkflowTag): Promise<Prepared> {
    const run = await this.ctx.workflows.get(tag.runId);
    if (!run || (run.state !== "RUN_STARTED" && tag.callType !== "failureCall")) {
      await this.drop(c);
      return "dropped";
    }
    if (tag.callType === "toCallback") return undefined;
    if (tag.callType === "failureCall" && run.state === "RUN_STARTED") await this.failedFirst(c);
    if (tag.waitFor !== undefined && !(await this.timeoutWins(c, tag.waitFor))) {
      await this.drop(c);
      return "dropped";
    }
    if (tag.callType === "step") return this.stepDelivery(c, run);
    // Callback and failure-callback deliveries carry no protocol version (§7, §9).
    const own = tag.callType === "failureCall" ? c.meta.header : runHeader(c, run);
    const header = { ...withoutVersion(own), ...identity(run) };
    const body = tag.callType === "failureCall" ? await this.failureBody(c.body, run) : c.body;
    return { body, header };
  }

  /**
   * A 2xx from an endpoint that is not a workflow endpoint fails the run (§5), and so does a
   * REST-triggered run's first answer from an SDK older than 1.0 (§14). A run of the deprecated
   * serve is not checked: its endpoint never sends the protocol version (§15).
   */
  review(c: Claimed, r: AttemptResult): AttemptResult {
    const tag = c.meta.workflow;
    if (tag?.callType !== "step" || !isSuccess(r)) return r;
    const fail = (error: string): AttemptResult => {
      const header = { ...r.header, "Upstash-Nonretryable-Error": ["true"] };
      return { ...r, status: 489, header, error };
    };
    const legacy = tag.legacySdk === true;
    if (!legacy && r.header[OUT.sdkVersion] === undefined) return fail(NON_WORKFLOW_DESTINATION);
    const sdk = r.header[SDK_VERSION_HEADER]?.[0] ?? "";
    if (tag.restTrigger && !/^v?[1-9]\d*\./.test(sdk)) return fail(REST_TRIGGER_NEEDS_V1);
    return r;
  }

  async recorded(
    c: Claimed,
    outcome: Outcome,
    r: AttemptResult,
    dlq: DlqMeta | undefined,
    children: readonly NewMessage[],
  ): Promise<void> {
    const tag = c.meta.workflow;
    if (!tag) return;
    try {
      // Every failed attempt shows in the logs, before a final one ends the run (§12).
      if (outcome !== "DELIVERED") {
        const text = failureText(r);
        await this.ctx.workflows.recordError(tag.runId, c.meta.messageId, r, text, Date.now());
      }
      if (tag.callType === "toCallback") await this.callDone(c, dlq, children);
      else if (tag.callType === "failureCall") await this.failureCallDone(c, outcome, r);
      else if (outcome === "FAILED" && dlq) await this.runFailed(c, dlq, r, children);
    } catch (err) {
      this.ctx.log.warn("workflow bookkeeping failed", { runId: tag.runId, err: messageOf(err) });
    }
  }

  private async stepDelivery(c: Claimed, run: RunRecord): Promise<Prepared> {
    const entries = await this.ctx.workflows.entries(run.runId);
    const at = entries.findIndex((e) => e.startsWith(`{"messageId":"${c.meta.messageId}"`));
    const text = `[${(at === -1 ? entries : entries.slice(0, at + 1)).join(",")}]`;
    // Above the message size the endpoint fetches the list itself (LazyFetch, §5); the
    // deprecated serve cannot, and gets the whole list (§15).
    const big = Buffer.byteLength(text) > this.ctx.config.queueMaxMessageBytes;
    const lazy = big && !run.config.legacySdk;
    const header = runHeader(c, run);
    header["Content-Type"] = ["application/json"];
    header[OUT.sdkVersion] = [PROTOCOL_VERSION];
    Object.assign(header, identity(run));
    return { body: lazy ? Buffer.alloc(0) : Buffer.from(text), header };
  }

  /**
   * A wait's timeout message goes out only if it ends the wait, i.e. no notification came
   * first (§8); its entry then joins the step list.
   */
  private async timeoutWins(c: Claimed, eventId: string): Promise<boolean> {
    const id = c.meta.messageId;
    const entry = stepEntry(id, c.body, "step");
    const runId = c.meta.workflow?.runId ?? "";
    const outcome = await this.ctx.workflows.release(Date.now(), runId, eventId, id, { id, entry });
    return outcome === "released" || outcome === "again";
  }

  /**
   * A failure callback whose run is still active: the failure's own end of the run was cut off
   * (a crash right after the failed message moved to the DLQ) or has not run yet. Either way the
   * run ends as failed now, before the failure function hears of it (§7).
   */
  private async failedFirst(c: Claimed): Promise<void> {
    let dlqId: unknown;
    try {
      dlqId = (JSON.parse(c.body.toString("utf8")) as { dlqId?: unknown }).dlqId;
    } catch {
      return;
    }
    const entry = typeof dlqId === "string" ? await this.ctx.dlq.get(dlqId) : undefined;
    if (entry && isRunEntry(entry)) await endUnfinishedFailure(this.ctx, entry, c.meta.messageId);
  }

  /** Finishes a claimed message of an ended run as CANCELED without sending it (§6). */
  private async drop(c: Claimed): Promise<void> {
    const now = Date.now();
    await this.ctx.messages.cancel(now, [c.meta.messageId]);
    await this.ctx.messages.finish(now, {
      id: c.meta.messageId,
      token: c.token,
      outcome: "RETRY",
      attempt: JSON.stringify({ error: "workflow run has ended" }),
      children: [],
    });
  }

  /** A context.call attempt: its callback joins the list; it never fails the run (§9). */
  private async callDone(c: Claimed, dlq: DlqMeta | undefined, children: readonly NewMessage[]) {
    const runId = c.meta.workflow?.runId ?? "";
    const appends = children.map((m) => ({
      id: m.meta.messageId,
      entry: stepEntry(m.meta.messageId, m.body, "fromCallback"),
    }));
    if (appends.length > 0) await this.ctx.workflows.append(Date.now(), runId, appends);
    if (dlq) await this.ctx.dlq.delete([dlq.dlqId]);
  }

  private async runFailed(
    c: Claimed,
    dlq: DlqMeta,
    r: AttemptResult,
    children: readonly NewMessage[],
  ) {
    const runId = c.meta.workflow?.runId ?? "";
    const failureCall = children.find((m) => m.meta.workflow?.callType === "failureCall");
    const failure: FailureOutcome | undefined = failureCall && {
      state: "CALLBACK_INPROGRESS",
      messageId: failureCall.meta.messageId,
    };
    await endRun(this.ctx, runId, "RUN_FAILED", {
      dlqId: dlq.dlqId,
      error: failureText(r),
      ...(failure ? { failure: JSON.stringify(failure) } : {}),
    });
  }

  private async failureCallDone(c: Claimed, outcome: Outcome, r: AttemptResult) {
    if (outcome === "RETRY") return;
    const failure: FailureOutcome = {
      state: outcome === "DELIVERED" ? "CALLBACK_SUCCESS" : "CALLBACK_FAIL",
      messageId: c.meta.messageId,
      responseStatus: r.status,
      responseBody: r.body.toString("utf8"),
      responseHeaders: r.header,
    };
    const runId = c.meta.workflow?.runId ?? "";
    await this.ctx.workflows.setFields(runId, { failure: JSON.stringify(failure) });
  }

  /**
   * The failure callback body with the run's fields the SDK reads (§7). The deprecated serve
   * reads `sourceBody` as the step array the failed message was delivered with (§15).
   */
  private async failureBody(raw: Buffer, run: RunRecord): Promise<Buffer> {
    let v: Record<string, unknown> = {};
    try {
      v = JSON.parse(raw.toString("utf8")) as Record<string, unknown>;
    } catch {
      // A failure callback body is always our own JSON; keep going with the run's fields.
    }
    let source = run.body;
    if (run.config.legacySdk) {
      const entries = await this.ctx.workflows.entries(run.runId);
      const failed = `{"messageId":"${String(v["sourceMessageId"])}"`;
      const at = entries.findIndex((e) => e.startsWith(failed));
      source = Buffer.from(`[${(at === -1 ? entries : entries.slice(0, at + 1)).join(",")}]`);
    }
    return Buffer.from(
      JSON.stringify({
        ...v,
        url: run.url,
        sourceBody: source.toString("base64"),
        workflowRunId: run.runId,
        workflowCreatedAt: run.createdAt,
      }),
    );
  }
}

/** The run's forwarded headers under the message's own (WF_TriggerOnConfig, §4). */
function runHeader(c: Claimed, run: RunRecord): Headers {
  return { ...run.config.header, ...c.meta.header };
}

function withoutVersion(header: Headers): Headers {
  return Object.fromEntries(Object.entries(header).filter(([name]) => name !== OUT.sdkVersion));
}

function identity(run: RunRecord): Headers {
  return {
    [OUT.runId]: [run.runId],
    [OUT.url]: [run.url],
    [OUT.createdAt]: [String(run.createdAt)],
  };
}
