import { useEffect, useState } from "preact/hooks";

/**
 * The console's URLs: every object and every filtered list has one, in the hash, so a link can be
 * pasted into a chat and the browser's back/forward move between them. This file is the one
 * route table; docs/console.md (Links) lists the same forms, which are kept stable:
 *
 *   #/messages/<messageId>                 a message
 *   #/dlq/<dlqId>                          a DLQ entry
 *   #/schedules/<scheduleId>               a schedule
 *   #/queues/<name>                        a FIFO queue
 *   #/workflows/runs/<workflowRunId>       a workflow run (its step timeline)
 *   #/workflows/dlq                        the workflow DLQ
 *   #/kv/<database>/key/<key>              a KV key
 *   #/<list>?<filter>=<value>&...          a list with filters, e.g. #/logs?state=ERROR
 *
 * Each path segment is URL-encoded on its own (a key `a/b c` is `a%2Fb%20c`), so any id or key
 * name survives the trip; filters are the API's own query parameter names.
 */
export interface Route {
  /** The first segment: messages, dlq, logs, schedules, queues, workflows, kv, ... */
  page: string;
  /** The segments after it, decoded. */
  rest: string[];
  /** The list filters after `?`. */
  params: URLSearchParams;
}

const seg = encodeURIComponent;

/** Reads a hash (`#/dlq/123?x=1`) into a route; bad percent-escapes are kept as typed. */
export function parseRoute(hash: string): Route {
  const body = hash.replace(/^#\/?/, "");
  const q = body.indexOf("?");
  const path = q < 0 ? body : body.slice(0, q);
  const parts = path === "" ? [] : path.split("/").map(decodeSegment);
  return {
    page: parts[0] ?? "",
    rest: parts.slice(1),
    params: new URLSearchParams(q < 0 ? "" : body.slice(q + 1)),
  };
}

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** `?a=1&b=2` from the non-empty values, "" when none. */
function queryOf(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** The link of each object and list (see the table above). */
export const href = {
  message: (messageId: string) => `#/messages/${seg(messageId)}`,
  dlq: (dlqId: string) => `#/dlq/${seg(dlqId)}`,
  schedule: (scheduleId: string) => `#/schedules/${seg(scheduleId)}`,
  queue: (name: string) => `#/queues/${seg(name)}`,
  workflowRun: (workflowRunId: string) => `#/workflows/runs/${seg(workflowRunId)}`,
  kvKey: (db: string, key: string) => `#/kv/${seg(db)}/key/${seg(key)}`,
  /** A list page with filters: `list("logs", {state: "ERROR"})` → `#/logs?state=ERROR`. */
  list: (page: string, params: Record<string, string | undefined> = {}) =>
    `#/${page}${queryOf(params)}`,
  /** A KV database's key list with its search (`match`, `type`) and the key open, if any. */
  kv: (db: string, params: Record<string, string | undefined> = {}) =>
    `#/kv/${seg(db)}${queryOf(params)}`,
};

/** Goes to `target` as a new history entry (so Back returns), unless it is already there. */
export function navigate(target: string): void {
  if (location.hash !== target) location.hash = target;
}

/** The current route, updated on every hash change (links, navigate, back and forward). */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}

/** The filters of `params` that a page knows (`names`), "" for the missing ones. */
export function paramsOf<K extends string>(
  params: URLSearchParams,
  names: readonly K[],
): Record<K, string> {
  const out = {} as Record<K, string>;
  for (const n of names) out[n] = params.get(n) ?? "";
  return out;
}
