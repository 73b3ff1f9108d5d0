/**
 * The browser side of the console API (/console/api, see docs/console.md). Every call sends the
 * session cookie (same origin) and the CSRF header; a 401 means the session ended, and the app
 * goes back to the login page.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

let onUnauthorized: () => void = () => undefined;

export function whenLoggedOut(fn: () => void): void {
  onUnauthorized = fn;
}

/** Status of an ApiError when stashd did not answer at all (down, or no answer in time). */
export const UNREACHABLE = 0;

export async function request<T = unknown>(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
  timeoutMs?: number,
): Promise<T> {
  const init: RequestInit = {
    method,
    credentials: "same-origin",
    headers: { "x-stashd-console": "1", ...headers },
    ...(timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(timeoutMs) }),
  };
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)["content-type"] ??= "application/json";
  }
  let res: Response;
  try {
    res = await fetch(`/console/api/${path}`, init);
  } catch {
    // fetch only rejects when there is no HTTP answer: say so instead of "Failed to fetch".
    throw new ApiError(UNREACHABLE, "stashd is unreachable (no answer): is it running?");
  }
  const text = await res.text();
  const parsed: unknown = text === "" ? undefined : safeJson(text);
  if (!res.ok) {
    const msg =
      parsed && typeof parsed === "object" && "error" in parsed
        ? String((parsed as { error: unknown }).error)
        : `${res.status} ${res.statusText}`;
    if (res.status === 401 && path !== "login") onUnauthorized();
    throw new ApiError(res.status, msg);
  }
  return parsed as T;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export const get = <T = unknown>(path: string, timeoutMs?: number) =>
  request<T>("GET", path, undefined, {}, timeoutMs);

/** A query string from the non-empty values (repeated keys for arrays). */
export function query(params: Record<string, string | string[] | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    for (const one of Array.isArray(v) ? v : [v]) if (one) q.append(k, one);
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** The queue API through the console: `queue("dlq?count=50")` → GET /v2/dlq?count=50. */
export const queue = <T = unknown>(path: string) => get<T>(`queue/${path}`);

export function queueSend<T = unknown>(
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
): Promise<T> {
  return request<T>(method, `queue/${path}`, body, headers);
}

export type KvResult = { result: unknown } | { error: string };

/** Runs commands on a KV database; `standard` selects the read-write token. */
export async function kvExec(
  db: string,
  commands: string[][],
  token: "readonly" | "standard" = "standard",
): Promise<KvResult[]> {
  const r = await request<{ results: KvResult[] }>("POST", `kv/${encodeURIComponent(db)}/exec`, {
    commands,
    token,
  });
  return r.results;
}

/** Runs commands with the standard token and throws on the first Redis error. */
export async function kvWrite(db: string, ...commands: string[][]): Promise<unknown[]> {
  const results = await kvExec(db, commands, "standard");
  return results.map((r) => {
    if ("error" in r) throw new ApiError(400, r.error);
    return r.result;
  });
}

/** Thrown when a compare-and-write found a value other than the one the page showed. */
export class ChangedError extends ApiError {
  constructor() {
    super(409, "the value changed since it was loaded: nothing was written; refresh to see it");
  }
}

/**
 * A command argument of an edit: text (its UTF-8 bytes) or `{hex}`, bytes that are not UTF-8,
 * as GET .../key shows such members.
 */
export type Arg = string | { hex: string };

/**
 * One edit of a key through POST /console/api/kv/<db>/edit (src/admin/console/kv-edit.ts, one
 * Lua script, so atomic): with `compare`, the `writes` run only when `compare.read` still
 * answers `compare.expected` (what the page showed) and a ChangedError is thrown otherwise;
 * without it they run at once. Every argument keeps its exact bytes.
 */
export async function kvEdit(
  db: string,
  key: string,
  writes: Arg[][],
  compare?: { read: Arg[]; expected: Arg },
): Promise<void> {
  const r = await request<{ wrote: boolean }>("POST", `kv/${encodeURIComponent(db)}/edit`, {
    key,
    writes,
    ...compare,
  });
  if (!r.wrote) throw new ChangedError();
}
