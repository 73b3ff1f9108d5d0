import { AppError } from "../../shared/errors.js";
import type { MessageMeta } from "./message.js";

/**
 * List/bulk filters (docs/qstash-protocol.md §2.4, §2.8, §2.9): OR within a filter, AND across
 * filters; dates are inclusive epoch ms. Given as repeated or comma-separated query keys, or as a
 * JSON body (PY/GO).
 */
export interface Filter {
  values: Map<string, string[]>;
  fromDate?: number | undefined;
  toDate?: number | undefined;
}

const KEYS = [
  "messageId",
  "topicName",
  "queueName",
  "url",
  "host",
  "path",
  "label",
  "flowControlKey",
  "scheduleId",
  "callerIp",
  "state",
  "responseStatus",
] as const;

/** What a filter is matched against besides the message itself. */
export interface Facts {
  time: number;
  state?: string | undefined;
  responseStatus?: number | undefined;
}

export function filterFromQuery(q: URLSearchParams): Filter {
  return build(
    (key) => {
      const raw = [...q.getAll(key), ...(key === "callerIp" ? q.getAll("callerIP") : [])];
      return raw.flatMap((v) => v.split(",")).filter((v) => v !== "");
    },
    q.get("fromDate") ?? undefined,
    q.get("toDate") ?? undefined,
  );
}

export function filterFromJson(body: Record<string, unknown>): Filter {
  const read = (key: string): string[] => {
    const v = body[key] ?? (key === "callerIp" ? body["callerIP"] : undefined);
    if (v === undefined || v === null || v === "") return [];
    return (Array.isArray(v) ? v : [v]).map(String);
  };
  const date = (k: string) => (body[k] === undefined ? undefined : String(body[k]));
  return build(read, date("fromDate"), date("toDate"));
}

function build(read: (k: string) => string[], from?: string, to?: string): Filter {
  const values = new Map<string, string[]>();
  for (const key of KEYS) {
    let v = read(key);
    if (key === "state") v = v.flatMap(expandState);
    if (v.length > 0) values.set(key, v);
  }
  return { values, fromDate: toMs(from, "fromDate"), toDate: toMs(to, "toDate") };
}

function expandState(s: string): string[] {
  const up = s.toUpperCase();
  if (up === "IN_PROGRESS") return ["ACTIVE", "RETRY", "ERROR"];
  return [up === "CANCELLED" ? "CANCELED" : up];
}

function toMs(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined || raw === "") return undefined;
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

function field(key: string, meta: MessageMeta, facts: Facts): string[] {
  switch (key) {
    case "messageId":
      return [meta.messageId];
    case "topicName":
      return meta.topicName ? [meta.topicName] : [];
    case "url":
      return [meta.url];
    case "host":
    case "path":
      return urlPart(meta.url, key);
    case "label":
      return meta.labels ?? [];
    case "callerIp":
      return meta.callerIP ? [meta.callerIP] : [];
    case "scheduleId":
      return meta.scheduleId ? [meta.scheduleId] : [];
    case "queueName":
      return meta.queueName ? [meta.queueName] : [];
    case "state":
      return facts.state ? [facts.state] : [];
    case "responseStatus":
      return facts.responseStatus === undefined ? [] : [String(facts.responseStatus)];
    case "flowControlKey":
      return meta.flowControl ? [meta.flowControl.key] : [];
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
