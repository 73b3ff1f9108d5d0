/**
 * Header names and values of the @upstash/workflow protocol that stashd reads or writes
 * (docs/workflow.md §1). Incoming names are Node's lower-case ones.
 */
export const IN = {
  runId: "upstash-workflow-runid",
  init: "upstash-workflow-init",
  url: "upstash-workflow-url",
  callType: "upstash-workflow-calltype",
  invoke: "upstash-workflow-invoke",
  triggerBySdk: "upstash-workflow-trigger-by-sdk",
  featureSet: "upstash-feature-set",
} as const;

/** Headers as delivered to the endpoint (canonical casing, as stored in message meta). */
export const OUT = {
  runId: "Upstash-Workflow-Runid",
  url: "Upstash-Workflow-Url",
  createdAt: "Upstash-Workflow-Createdat",
  sdkVersion: "Upstash-Workflow-Sdk-Version",
} as const;

/** The protocol version the SDK speaks and marks its answers with. */
export const PROTOCOL_VERSION = "1";

/**
 * The feature an SDK declares in `Upstash-Feature-Set` when its endpoint answers with
 * `Upstash-Workflow-Sdk-Version` and wants a run failed if a destination does not (§5). The
 * deprecated `serve` of `@upstash/qstash/workflow` declares no feature set (§15).
 */
export const DETECT_TRIGGER = "WF_DetectTrigger";

/** True when an `Upstash-Feature-Set` value (comma-separated) declares `DETECT_TRIGGER`. */
export const declaresDetectTrigger = (featureSet: string | undefined): boolean =>
  (featureSet ?? "").split(",").some((f) => f.trim() === DETECT_TRIGGER);

export type CallType = "step" | "toCallback" | "fromCallback" | "failureCall";

export const NON_WORKFLOW_DESTINATION =
  "detected a non-workflow destination for trigger/invoke. make sure you are sending the request to the correct endpoint";

/** The response header carrying the SDK's own version (`v1.3.2`); checked for REST triggers. */
export const SDK_VERSION_HEADER = "Upstash-Workflow-Sdk";

export const REST_TRIGGER_NEEDS_V1 =
  "trigger rest api is only usable with sdk versions after v1.0.0 major version";
