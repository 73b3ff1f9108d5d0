import { canonicalHeader } from "../../domain/headers.js";
import type { Headers } from "../../domain/message.js";
import { parsePublishOptions } from "../../domain/publish-options.js";
import type { QueueContext, QueueRequest } from "../../routes/context.js";
import { configValues } from "../../routes/publish-request.js";
import type { RunConfig } from "../state/run.js";

const LABEL = canonicalHeader("upstash-label");

/** A resumed or restarted run's configuration and when its first message is due. */
export interface Recovery {
  config: RunConfig;
  /** ms; `Upstash-Delay` / `Upstash-Not-Before` of the request, else now. */
  dueAt: number;
}

/**
 * What a DLQ resume or restart request overrides of the failed run (docs/workflow.md §12), as
 * Upstash's REST docs list the headers: `Upstash-Retries`, `Upstash-Retry-Delay`,
 * `Upstash-Flow-Control-Key/-Value`, `Upstash-Label` (also forwarded to the endpoint, which reads
 * it as `context.label`), `Upstash-Failure-Callback` (the run's failure-callback headers kept) and
 * `Upstash-Delay`. Values are validated as on a publish (400 for a bad one).
 */
export function recoveryOf(ctx: QueueContext, r: QueueRequest, run: RunConfig): Recovery {
  const cfg = configValues(r);
  const now = Date.now();
  const opts = parsePublishOptions(cfg, {}, now, ctx.config);
  const given = (name: string) => cfg.has(name);
  const header = { ...run.header };
  if (opts.labels) header[LABEL] = [opts.labels.join(",")];
  const config: RunConfig = {
    ...run,
    header,
    ...(given("upstash-retries") ? { maxRetries: opts.maxRetries } : {}),
    ...(given("upstash-retry-delay") ? { retryDelayExpression: opts.retryDelayExpression } : {}),
    ...(opts.flowControl ? { flowControl: opts.flowControl } : {}),
    ...(opts.labels ? { labels: opts.labels } : {}),
    ...(opts.failureCallback ? { failureCallback: opts.failureCallback } : {}),
  };
  return { config, dueAt: opts.dueAt };
}

/** A message's forwarded headers with the run's (possibly overridden) label header. */
export function withLabelHeader(header: Headers, config: RunConfig): Headers {
  const label = config.header[LABEL];
  return label ? { ...header, [LABEL]: label } : header;
}
