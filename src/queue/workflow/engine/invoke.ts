import { AppError } from "../../../shared/errors.js";
import { checkJsonValues } from "../../../shared/json-bound.js";
import type { Invoker } from "../state/run.js";

/**
 * The body of an invoke publish (docs/workflow.md §10): the invoked run's payload wrapped with
 * the invoker's identity, headers and Invoke step.
 */
export function parseInvoke(raw: Buffer, maxValues: number): { body: Buffer; invoker: Invoker } {
  const o = jsonObject(raw, "an invoke body", maxValues);
  const runId = o["workflowRunId"];
  const url = o["workflowUrl"];
  if (typeof runId !== "string" || typeof url !== "string") {
    throw new AppError("bad_request", "an invoke body needs workflowRunId and workflowUrl");
  }
  const body = typeof o["body"] === "string" ? o["body"] : JSON.stringify(o["body"] ?? "");
  return {
    body: Buffer.from(body, "utf8"),
    invoker: {
      workflowRunId: runId,
      workflowUrl: url,
      workflowRunCreatedAt: Number(o["workflowRunCreatedAt"] ?? 0),
      headers: headerLists(o["headers"]),
      step: (typeof o["step"] === "object" && o["step"] !== null ? o["step"] : {}) as Record<
        string,
        unknown
      >,
    },
  };
}

/**
 * A request body that must be a JSON object (400 `<what> must be a JSON object` otherwise) of at
 * most `maxValues` values (STASHD_QUEUE_MAX_JSON_VALUES, counted before parsing: json-bound.ts).
 */
export function jsonObject(raw: Buffer, what: string, maxValues: number): Record<string, unknown> {
  checkJsonValues(raw, maxValues, what, "STASHD_QUEUE_MAX_JSON_VALUES");
  let v: unknown;
  try {
    v = JSON.parse(raw.toString("utf8"));
  } catch {
    v = undefined;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw new AppError("bad_request", `${what} must be a JSON object`);
  }
  return v as Record<string, unknown>;
}

function headerLists(v: unknown): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (typeof v !== "object" || v === null) return out;
  for (const [name, value] of Object.entries(v as Record<string, unknown>)) {
    out[name.toLowerCase()] = (Array.isArray(value) ? value : [value]).map(String);
  }
  return out;
}
