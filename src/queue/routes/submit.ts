import { AppError } from "../../shared/errors.js";
import { parsePublishOptions, type ConfigValues } from "../domain/publish-options.js";
import { produce } from "../produce/produce.js";
import type { QueueContext } from "./context.js";

/** Queue names (docs/qstash-protocol.md §2.2): alphanumeric, `-`, `_`, `.`. */
const QUEUE_NAME = /^[A-Za-z0-9_.-]+$/;

export function checkQueueName(name: string): string {
  if (!QUEUE_NAME.test(name)) {
    throw new AppError("bad_request", "invalid queue name: use letters, digits, -, _ or .");
  }
  return name;
}

/** One publish or enqueue, however it arrived (enqueue route, batch item). */
export interface Submission {
  /** The destination URL, or the URL group name when `group` is set. */
  destination: string;
  group?: string | undefined;
  /** Configuration values given the URL group's default headers (if any). */
  config(defaults?: Record<string, string[]>): ConfigValues;
  /** Lower-case request headers (for `Upstash-Header-Forward`). */
  requestHeaders: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** Enqueue into this FIFO queue instead of publishing. */
  queue?: string | undefined;
  callerIP: string | undefined;
}

/** What a publish answers: status 201, or 202 for a duplicate; an object, or an array for groups. */
export interface SubmitResult {
  status: 201 | 202;
  value: unknown;
}

/**
 * Stores a publish or an enqueue through the produce path (produce/produce.ts): one message per
 * target, deduplicated, into the due set (handed to this process's dispatcher when it can take
 * them at once) or the FIFO queue. Answers what publish answers.
 */
export async function submit(ctx: QueueContext, s: Submission): Promise<SubmitResult> {
  const result = await produce(ctx, {
    to: s.group === undefined ? { url: s.destination } : { group: s.group },
    options: (now, defaults) =>
      parsePublishOptions(s.config(defaults), s.requestHeaders, now, ctx.config),
    body: s.body,
    callerIP: s.callerIP,
    queue: s.queue,
  });
  const shaped = (list: object[]) => (result.fanOut ? list : list[0]);
  if (!result.stored) {
    return {
      status: 202,
      value: shaped(result.messages.map((m) => ({ ...m, deduplicated: true }))),
    };
  }
  return { status: 201, value: shaped(result.messages) };
}
