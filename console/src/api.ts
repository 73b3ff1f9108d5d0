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

/**
 * Compare-and-write (one Lua script, so atomic): runs `read` and, only when it still answers
 * `expected` (what the page showed), the `writes`. Answers whether it wrote. Every command works
 * on `key` alone (KEYS[1]); the key also appears in the commands' own arguments. A number reply
 * compares as its decimal text, nil as "", and an array reply (XRANGE) as its strings flattened
 * in order, joined by NUL (see `flatReply`).
 */
const COMPARE_AND_WRITE = `local i = 1
local function take()
  local n = tonumber(ARGV[i])
  local out = {}
  for j = 1, n do out[j] = ARGV[i + j] end
  i = i + n + 1
  return out
end
local current = redis.call(unpack(take()))
local expected = ARGV[i]
i = i + 1
local function flat(v, out)
  if type(v) == 'table' then
    for _, x in ipairs(v) do flat(x, out) end
  else
    out[#out + 1] = tostring(v)
  end
  return out
end
if type(current) == 'number' then current = tostring(current) end
if type(current) == 'table' then current = table.concat(flat(current, {}), '\\0') end
if current ~= expected then return 0 end
while i <= #ARGV do redis.call(unpack(take())) end
return 1`;

/** An array reply as the compare-and-write script compares it: strings flattened, NUL-joined. */
export function flatReply(value: unknown): string {
  const out: string[] = [];
  const walk = (v: unknown) => (Array.isArray(v) ? v.forEach(walk) : out.push(String(v)));
  walk(value);
  return out.join("\u0000");
}

/** Thrown when a compare-and-write found a value other than the one the page showed. */
export class ChangedError extends ApiError {
  constructor() {
    super(409, "the value changed since it was loaded: nothing was written; refresh to see it");
  }
}

export async function kvCompareAndWrite(
  db: string,
  key: string,
  read: string[],
  expected: string,
  ...writes: string[][]
): Promise<void> {
  const args = [String(read.length), ...read, expected];
  for (const w of writes) args.push(String(w.length), ...w);
  const [wrote] = await kvWrite(db, ["EVAL", COMPARE_AND_WRITE, "1", key, ...args]);
  if (Number(wrote) !== 1) throw new ChangedError();
}
