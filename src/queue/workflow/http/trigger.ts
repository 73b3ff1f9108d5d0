import { AppError } from "../../../shared/errors.js";
import { base58 } from "../../domain/ids.js";
import type { ConfigValues } from "../../domain/publish-options.js";
import type { Handler } from "../../routes/context.js";
import { configValues, parseDestination } from "../../routes/publish-request.js";
import { readRaw, reply } from "../../routes/util.js";
import { produceWorkflow } from "../engine/produce.js";
import { IN, PROTOCOL_VERSION } from "../engine/protocol.js";

const FORWARD = "upstash-forward-";
const FAILURE = "upstash-failure-callback";

/** A run id as the SDK makes them: `wfr_` and 21 random characters, or `wfr_<given id>`. */
export function runIdOf(given: string | undefined): string {
  const id = given?.trim();
  if (!id) return `wfr_${base58(21)}`;
  return id.startsWith("wfr_") ? id : `wfr_${id}`;
}

/**
 * The trigger message `client.trigger` would have published for these request headers
 * (docs/workflow.md §14): the run's identity, the forwarded protocol version and label, a failure
 * callback (the given `Upstash-Failure-Callback`, else the workflow URL) marked so that the
 * endpoint's `serve` recognises it, carrying the user's forwarded headers like the SDK's.
 */
export function triggerConfig(cfg: ConfigValues, runId: string, url: string): ConfigValues {
  const out = new Map(cfg);
  out.set(IN.init, "true");
  out.set(IN.runId, runId);
  out.set(IN.url, url);
  out.set(`${FORWARD}upstash-workflow-sdk-version`, PROTOCOL_VERSION);
  const label = cfg.get("upstash-label");
  // The endpoint reads the label from its request (context.label).
  if (label !== undefined) out.set(`${FORWARD}upstash-label`, label);
  if (!out.has(FAILURE)) out.set(FAILURE, url);
  // A failure callback carries no protocol version (docs/workflow.md §7).
  for (const [name, value] of [...out]) {
    const forwarded = name.startsWith(FORWARD) ? name.slice(FORWARD.length) : undefined;
    if (forwarded && forwarded !== "upstash-workflow-sdk-version")
      out.set(`${FAILURE}-forward-${forwarded}`, value);
  }
  out.set(`${FAILURE}-forward-upstash-workflow-is-failure`, "true");
  out.set(`${FAILURE}-forward-upstash-workflow-failure-callback`, "true");
  for (const name of [IN.callType, IN.invoke, IN.triggerBySdk]) out.delete(name);
  return out;
}

/**
 * POST /v2/trigger/{url}: starts a workflow run without the SDK's client (docs/workflow.md §14).
 * The body is the initial payload; the headers configure the run as on a publish. Answers
 * `{workflowRunId, workflowCreatedAt}`; 409 when the given run id is active.
 */
export const triggerRun: Handler = async (ctx, r) => {
  const { destination, group } = parseDestination(r);
  if (group !== undefined) {
    throw new AppError("bad_request", "the workflow trigger needs a URL destination");
  }
  const cfg = configValues(r);
  const runId = runIdOf(cfg.get(IN.runId));
  const body = await readRaw(ctx, r);
  const [result] = await produceWorkflow(
    ctx,
    [
      {
        destination,
        config: () => triggerConfig(cfg, runId, cfg.get(IN.url) ?? destination),
        requestHeaders: r.req.headers,
        body,
        callerIP: r.req.socket.remoteAddress,
      },
    ],
    { restTrigger: true },
  );
  if (result?.deduplicated) throw new AppError("conflict", `workflow run ${runId} is active`);
  // The run can only be gone already if it ended and expired within this request.
  const createdAt = (await ctx.workflows.createdAt(runId)) ?? Date.now();
  reply(r.res, 200, { workflowRunId: runId, workflowCreatedAt: createdAt });
};
