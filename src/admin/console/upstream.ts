import { AppError, messageOf } from "../../shared/errors.js";

/** Longest a console call waits for the queue or KV API. */
const UPSTREAM_TIMEOUT_MS = 30_000;

export interface UpstreamReply {
  status: number;
  contentType: string;
  body: Buffer;
}

/**
 * One HTTP call to stashd's own public API (queue or KV) with a server-held token. The console
 * goes through the public APIs rather than the stores so that it sees exactly what SDK users see
 * and stays correct while the internals change.
 */
export async function callApi(
  url: string,
  token: string,
  init: { method: string; headers?: Record<string, string>; body?: Buffer | string },
): Promise<UpstreamReply> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: init.method,
      headers: { ...init.headers, authorization: `Bearer ${token}` },
      ...(init.body === undefined ? {} : { body: init.body }),
      signal: AbortSignal.timeout(UPSTREAM_TIMEOUT_MS),
    });
  } catch (err) {
    throw new AppError("backend_unavailable", `stashd API unreachable: ${messageOf(err)}`);
  }
  return {
    status: res.status,
    contentType: res.headers.get("content-type") ?? "application/json",
    body: Buffer.from(await res.arrayBuffer()),
  };
}

/** One KV REST reply: `{result}` or `{error}`, as the Upstash REST API answers. */
export type KvResult = { result: unknown } | { error: string };

/**
 * Runs commands on a KV database through the REST API (one call, or one /pipeline call). With
 * `base64`, string results come base64-encoded (`Upstash-Encoding: base64`), so binary values
 * survive; see decodeBase64Result.
 */
export async function kvCommands(
  kvUrl: string,
  token: string,
  commands: readonly (readonly string[])[],
  opts: { base64?: boolean } = {},
): Promise<KvResult[]> {
  const single = commands.length === 1;
  const encoding: Record<string, string> = opts.base64 ? { "upstash-encoding": "base64" } : {};
  const reply = await callApi(single ? `${kvUrl}/` : `${kvUrl}/pipeline`, token, {
    method: "POST",
    headers: { "content-type": "application/json", ...encoding },
    body: JSON.stringify(single ? commands[0] : commands),
  });
  let parsed: unknown;
  try {
    parsed = JSON.parse(reply.body.toString("utf8"));
  } catch {
    throw new AppError("backend_unavailable", `KV API answered ${reply.status} without JSON`);
  }
  if (single) return [parsed as KvResult];
  if (!Array.isArray(parsed)) return commands.map(() => parsed as KvResult);
  return parsed as KvResult[];
}

/** The result of one command, or an AppError carrying the Redis error text. */
export function resultOf(r: KvResult | undefined): unknown {
  if (!r) throw new AppError("backend_unavailable", "KV API gave no reply");
  if ("error" in r) throw new AppError("redis_error", r.error);
  return r.result;
}

/**
 * The bytes of a string result read with `base64`. The REST API leaves a top-level `OK` as is
 * (docs/redis-rest-protocol.md §2.2); no base64 text is "OK" (its length is a multiple of 4).
 */
export function decodeBase64Result(result: unknown): Buffer {
  const text = String(result ?? "");
  return text === "OK" ? Buffer.from("OK") : Buffer.from(text, "base64");
}
