import type { Reply } from "../../../shared/redis/resp.js";
import type { AttemptResult, Headers } from "../../domain/message.js";
import type { Partition } from "../../store/partitions.js";
import { asArray, asText, checked } from "../../store/replies.js";
import type { Append } from "./store.js";

/** What the logs show of a run's message besides its entry (docs/workflow.md §12). */
export interface StepInfo {
  /** When the message was stored (ms). */
  createdAt: number;
  /** The headers the message delivers, Content-Type included, name -> values. */
  headers: Headers;
  retries: number;
  /** The message's retry-delay expression, when one was set. */
  retryDelay?: string | undefined;
}

/** One failed delivery attempt of a run's message, as the logs show it. */
export interface StepError {
  messageId: string;
  error: string;
  status: number;
  headers: Headers;
  /** The response body as text. */
  body: string;
  time: number;
}

/** What the logs read of a run's messages (see `stepRecords`). */
export interface StepRecords {
  info: Map<string, StepInfo>;
  errors: Map<string, StepError[]>;
}

/**
 * Records what the logs need of the messages that just joined run `runId` (in partition `p`,
 * as every function here). Written after the transition that stored them (not inside it): a
 * crash in between only loses these log fields.
 */
export async function recordStepInfo(
  { redis, keys: Q }: Partition,
  runId: string,
  appends: readonly Append[],
): Promise<void> {
  const pairs = appends.flatMap((a) => {
    const meta = a.message?.meta;
    if (!meta) return [];
    const info: StepInfo = {
      createdAt: meta.createdAt,
      headers: meta.header,
      retries: meta.maxRetries,
      retryDelay: meta.retryDelayExpression,
    };
    return [meta.messageId, JSON.stringify(info)];
  });
  if (pairs.length > 0)
    checked(await redis.exec(["HSET", Q.workflowStepInfo(runId), ...pairs]), "step info");
}

/** Appends a failed attempt of message `messageId` to its run's error list. */
export async function recordStepError(
  { redis, keys: Q }: Partition,
  runId: string,
  messageId: string,
  r: AttemptResult,
  error: string,
  time: number,
): Promise<void> {
  const e: StepError = {
    messageId,
    error,
    status: r.status,
    headers: r.header,
    body: r.body.toString("utf8"),
    time,
  };
  checked(await redis.exec(["RPUSH", Q.workflowErrors(runId), JSON.stringify(e)]), "step error");
}

/** The recorded info by message id and the failed attempts by message id, oldest first. */
export async function stepRecords(
  { redis, keys: Q }: Partition,
  runId: string,
): Promise<StepRecords> {
  const [infoReply, errorReply] = await Promise.all([
    redis.exec(["HGETALL", Q.workflowStepInfo(runId)]),
    redis.exec(["LRANGE", Q.workflowErrors(runId), "0", "-1"]),
  ]);
  const flat = asArray(checked(infoReply, "step info")).map((r: Reply) => asText(r) ?? "");
  const info = new Map<string, StepInfo>();
  for (let i = 0; i + 1 < flat.length; i += 2)
    info.set(flat[i] ?? "", JSON.parse(flat[i + 1] ?? "{}") as StepInfo);
  const errors = new Map<string, StepError[]>();
  for (const r of asArray(checked(errorReply, "step errors"))) {
    const e = JSON.parse(asText(r) ?? "{}") as StepError;
    errors.set(e.messageId, [...(errors.get(e.messageId) ?? []), e]);
  }
  return { info, errors };
}
