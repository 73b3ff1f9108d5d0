import { AppError } from "../../../shared/errors.js";
import type { QueueContext } from "../../routes/context.js";
import { multi } from "../../routes/util.js";
import type { RunRecord } from "../state/run.js";

const CHUNK = 100;

/** Run-level filters of the logs and bulk cancel (docs/workflow.md §12); AND across keys. */
export interface RunFilter {
  runIds: string[];
  /** Workflow URLs (any of them): prefixes, or whole URLs with `urlExact`. */
  urls: string[];
  urlExact: boolean;
  /** Hosts (`host` or `host:port`) and paths of the workflow URL, any of them. */
  hosts: string[];
  paths: string[];
  createdAt?: number | undefined;
  states: string[];
  labels: string[];
  fromDate?: number | undefined;
  toDate?: number | undefined;
  callerIps: string[];
  flowControlKeys: string[];
}

const FILTER_KEYS = [
  "workflowRunId",
  "workflowRunIds",
  "workflowUrl",
  "workflowUrlExactMatch",
  "workflowCreatedAt",
  "state",
  "label",
  "fromDate",
  "toDate",
  "callerIp",
  "callerIP",
  "flowControlKey",
  "host",
  "path",
];

function ms(q: URLSearchParams, name: string): number | undefined {
  const raw = q.get(name);
  if (raw === null) return undefined;
  if (!/^\d+$/.test(raw)) throw new AppError("bad_request", `invalid ${name}: ${raw}`);
  return Number(raw);
}

/**
 * Parses the run filter; any key that is neither a filter nor one of `params` is a 400 naming
 * it, and a filter key with an empty value too (never "all" by mistake).
 */
export function runFilterFromQuery(q: URLSearchParams, params: readonly string[]): RunFilter {
  for (const key of q.keys()) {
    if (key === "qstash_token" || params.includes(key) || FILTER_KEYS.includes(key)) continue;
    throw new AppError("bad_request", `unknown filter key: ${key}`);
  }
  for (const key of FILTER_KEYS) {
    if (q.has(key) && multi(q, key).length === 0) {
      throw new AppError("bad_request", `empty value for filter key: ${key}`);
    }
  }
  return {
    runIds: [...multi(q, "workflowRunIds"), ...multi(q, "workflowRunId")],
    urls: multi(q, "workflowUrl"),
    urlExact: q.get("workflowUrlExactMatch") === "true",
    hosts: multi(q, "host"),
    paths: multi(q, "path"),
    createdAt: ms(q, "workflowCreatedAt"),
    states: multi(q, "state").map((s) => s.toUpperCase().replace("CANCELLED", "CANCELED")),
    labels: multi(q, "label"),
    fromDate: ms(q, "fromDate"),
    toDate: ms(q, "toDate"),
    callerIps: [...multi(q, "callerIp"), ...multi(q, "callerIP")],
    flowControlKeys: multi(q, "flowControlKey"),
  };
}

/** True when the filter has no condition at all. */
export const isEmptyRunFilter = (f: RunFilter): boolean =>
  f.runIds.length === 0 &&
  f.urls.length === 0 &&
  f.hosts.length === 0 &&
  f.paths.length === 0 &&
  f.createdAt === undefined &&
  f.states.length === 0 &&
  f.labels.length === 0 &&
  f.fromDate === undefined &&
  f.toDate === undefined &&
  f.callerIps.length === 0 &&
  f.flowControlKeys.length === 0;

const anyOf = (wanted: string[], have: (string | undefined)[]): boolean =>
  wanted.length === 0 || have.some((h) => h !== undefined && wanted.includes(h));

/** The workflow URL's host, host:port and path, for the `host` and `path` filters. */
function urlParts(url: string): { hosts: string[]; path: string | undefined } {
  try {
    const u = new URL(url);
    return { hosts: [u.hostname, u.host], path: u.pathname };
  } catch {
    return { hosts: [], path: undefined };
  }
}

export function matchesRun(f: RunFilter, run: RunRecord): boolean {
  if (f.runIds.length > 0 && !f.runIds.includes(run.runId)) return false;
  const urlMatches = (u: string) => (f.urlExact ? run.url === u : run.url.startsWith(u));
  if (f.urls.length > 0 && !f.urls.some(urlMatches)) return false;
  if (f.hosts.length > 0 || f.paths.length > 0) {
    const parts = urlParts(run.url);
    if (!anyOf(f.hosts, parts.hosts) || !anyOf(f.paths, [parts.path])) return false;
  }
  if (f.createdAt !== undefined && run.createdAt !== f.createdAt) return false;
  if (f.fromDate !== undefined && run.createdAt < f.fromDate) return false;
  if (f.toDate !== undefined && run.createdAt > f.toDate) return false;
  return (
    anyOf(f.states, [run.state]) &&
    anyOf(f.labels, run.config.labels ?? []) &&
    anyOf(f.callerIps, [run.callerIp]) &&
    anyOf(f.flowControlKeys, [run.config.flowControl?.key])
  );
}

/** `<createdAt>:<runId>` of the last run examined. */
function parseCursor(raw: string | null): [number, string] | undefined {
  if (raw === null || raw === "") return undefined;
  const m = /^(\d+):(.+)$/.exec(raw);
  if (!m) throw new AppError("bad_request", `invalid cursor: ${raw}`);
  return [Number(m[1]), m[2] ?? ""];
}

/**
 * Up to `count` runs matching `keep`, newest first, after the `cursor`; the next cursor when
 * more may follow. At most `maxScanned` runs are examined (STASHD_QUEUE_PAGE_MAX_SCANNED for a
 * listing), so a filter matching nothing answers an empty page with a cursor instead of reading
 * every run. Index entries of expired runs are dropped on the way. The pages come merged
 * over every queue partition in one total order (WorkflowStore.runPage), so a cursor is a
 * position in all of them: each run is listed once, as with one partition.
 */
export async function scanRuns(
  ctx: QueueContext,
  keep: (run: RunRecord) => boolean | Promise<boolean>,
  count: number,
  cursor: string | null,
  maxScanned = Infinity,
): Promise<{ runs: RunRecord[]; cursor?: string }> {
  let from = parseCursor(cursor);
  const runs: RunRecord[] = [];
  let scanned = 0;
  for (;;) {
    const page = await ctx.workflows.runPage(from, CHUNK);
    const loaded = await Promise.all(page.map((p) => ctx.workflows.get(p.runId)));
    await ctx.workflows.forget(page.filter((_, i) => !loaded[i]).map((p) => p.runId));
    for (const [i, p] of page.entries()) {
      from = [p.createdAt, p.runId];
      const run = loaded[i];
      if (run && (await keep(run))) runs.push(run);
      if (runs.length === count || ++scanned >= maxScanned) {
        return i === page.length - 1 && page.length < CHUNK
          ? { runs }
          : { runs, cursor: `${p.createdAt}:${p.runId}` };
      }
    }
    if (page.length < CHUNK) return { runs };
  }
}
