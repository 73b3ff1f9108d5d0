import { AppError } from "../../shared/errors.js";
import type { MessageMeta } from "./message.js";

/**
 * List/bulk filters (docs/qstash-protocol.md §2.4, §2.8, §2.9; refusals in docs/queue.md,
 * decisions: filters): OR within a filter, AND across filters; dates are inclusive epoch ms.
 * Given as repeated or comma-separated query keys, or as a JSON body (PY/GO).
 *
 * Every key a request carries must be known to its route: an unknown key (a typo such as
 * `labeel`) is a 400 naming the key, and a known filter key with no value is a 400 too, so a
 * mistyped or empty filter never widens a bulk action to "everything".
 */
export interface Filter {
  values: Map<string, string[]>;
  fromDate?: number | undefined;
  toDate?: number | undefined;
}

/** Which route reads the filter; each accepts its own keys (see `ACCEPTED`). */
export type FilterScope = "messages" | "dlq" | "logs" | "workflowDlq";

type FilterKey =
  | "messageId"
  | "topicName"
  | "queueName"
  | "url"
  | "host"
  | "path"
  | "label"
  | "flowControlKey"
  | "scheduleId"
  | "callerIp"
  | "state"
  | "responseStatus"
  | "workflowRunId"
  | "api";

const COMMON: FilterKey[] = [
  "topicName",
  "queueName",
  "url",
  "label",
  "flowControlKey",
  "scheduleId",
  "callerIp",
];

/** Filter keys and other parameters (ids, paging, dates) each scope accepts. */
const ACCEPTED: Record<FilterScope, { filters: FilterKey[]; params: string[] }> = {
  messages: {
    filters: [...COMMON, "host", "path", "workflowRunId"],
    params: ["messageIds", "count", "cursor"],
  },
  dlq: {
    filters: [...COMMON, "host", "path", "messageId", "responseStatus", "api"],
    params: ["dlqIds", "count", "cursor", "order", "source"],
  },
  logs: {
    filters: [...COMMON, "host", "path", "messageId", "state", "api", "workflowRunId"],
    params: ["messageIds", "count", "cursor", "order"],
  },
  // Run-level keys (workflowUrl, ...) are matched by the workflow DLQ itself (workflow/http/dlq.ts).
  workflowDlq: {
    filters: ["label", "callerIp", "flowControlKey", "url", "responseStatus", "workflowRunId"],
    params: [
      "dlqIds",
      "count",
      "cursor",
      "order",
      "source",
      "workflowUrl",
      "workflowUrlExactMatch",
      "workflowCreatedAt",
      "failureFunctionState",
    ],
  },
};

const ALWAYS = ["qstash_token", "fromDate", "toDate", "callerIP"];

/** What a filter is matched against besides the message itself. */
export interface Facts {
  time: number;
  state?: string | undefined;
  responseStatus?: number | undefined;
}

/** The filter keys `scope` accepts, the dates included (not its ids, paging or order). */
export function filterKeysOf(scope: FilterScope): string[] {
  return [...ACCEPTED[scope].filters, "fromDate", "toDate"];
}

/** Throws 400 naming the first key of `keys` the scope does not know. */
export function checkKeys(keys: Iterable<string>, scope: FilterScope): void {
  const { filters, params } = ACCEPTED[scope];
  for (const key of keys) {
    if (ALWAYS.includes(key) || params.includes(key) || (filters as string[]).includes(key)) {
      continue;
    }
    throw new AppError("bad_request", `unknown filter key: ${key}`);
  }
}

export function filterFromQuery(q: URLSearchParams, scope: FilterScope): Filter {
  checkKeys(q.keys(), scope);
  return build(
    scope,
    (key) => {
      const present = q.has(key) || (key === "callerIp" && q.has("callerIP"));
      if (!present) return undefined;
      const raw = [...q.getAll(key), ...(key === "callerIp" ? q.getAll("callerIP") : [])];
      return raw.flatMap((v) => v.split(",")).filter((v) => v !== "");
    },
    q.get("fromDate") ?? undefined,
    q.get("toDate") ?? undefined,
  );
}

export function filterFromJson(body: Record<string, unknown>, scope: FilterScope): Filter {
  checkKeys(Object.keys(body), scope);
  const read = (key: string): string[] | undefined => {
    const v = body[key] ?? (key === "callerIp" ? body["callerIP"] : undefined);
    if (v === undefined) return undefined;
    if (v === null || v === "") return [];
    return (Array.isArray(v) ? v : [v]).map(String).filter((s) => s !== "");
  };
  const date = (k: string) => (body[k] === undefined ? undefined : String(body[k]));
  return build(scope, read, date("fromDate"), date("toDate"));
}

function build(
  scope: FilterScope,
  read: (k: string) => string[] | undefined,
  from?: string,
  to?: string,
): Filter {
  const values = new Map<string, string[]>();
  for (const key of ACCEPTED[scope].filters) {
    let v = read(key);
    if (v === undefined) continue;
    if (v.length === 0) throw new AppError("bad_request", `empty value for filter key: ${key}`);
    if (key === "state") v = v.flatMap(expandState);
    values.set(key, v);
  }
  return { values, fromDate: toMs(from, "fromDate"), toDate: toMs(to, "toDate") };
}

function expandState(s: string): string[] {
  const up = s.toUpperCase();
  if (up === "IN_PROGRESS") return ["ACTIVE", "RETRY", "ERROR"];
  return [up === "CANCELLED" ? "CANCELED" : up];
}

function toMs(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) throw new AppError("bad_request", `invalid ${name}: ${raw}`);
  return Number(raw);
}

export function isEmpty(f: Filter): boolean {
  return f.values.size === 0 && f.fromDate === undefined && f.toDate === undefined;
}

export function matches(f: Filter, meta: MessageMeta, facts: Facts): boolean {
  if (f.fromDate !== undefined && facts.time < f.fromDate) return false;
  if (f.toDate !== undefined && facts.time > f.toDate) return false;
  for (const [key, wanted] of f.values) {
    const have = field(key, meta, facts);
    if (!have.some((v) => wanted.includes(v))) return false;
  }
  return true;
}

const some = (v: string | undefined): string[] => (v ? [v] : []);

function field(key: string, meta: MessageMeta, facts: Facts): string[] {
  switch (key) {
    case "messageId":
      return [meta.messageId];
    case "url":
      return [meta.url];
    case "host":
    case "path":
      return urlPart(meta.url, key);
    case "label":
      return meta.labels ?? [];
    case "state":
      return some(facts.state);
    case "responseStatus":
      return facts.responseStatus === undefined ? [] : [String(facts.responseStatus)];
    case "flowControlKey":
      return some(meta.flowControl?.key);
    case "workflowRunId":
      return some(meta.workflow?.runId);
    default:
      return plainField(key, meta);
  }
}

/**
 * Fields kept as plain strings in the meta. `api` (messages published through a provider API)
 * matches nothing: stashd has no provider publishing, so no message carries one.
 */
function plainField(key: string, meta: MessageMeta): string[] {
  switch (key) {
    case "topicName":
      return some(meta.topicName);
    case "callerIp":
      return some(meta.callerIP);
    case "scheduleId":
      return some(meta.scheduleId);
    case "queueName":
      return some(meta.queueName);
    default:
      return [];
  }
}

function urlPart(url: string, part: "host" | "path"): string[] {
  try {
    const u = new URL(url);
    return [part === "host" ? u.host : u.pathname];
  } catch {
    return [];
  }
}
