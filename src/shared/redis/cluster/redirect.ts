import { AppError } from "../../errors.js";
import type { Reply } from "../resp.js";

/**
 * What a cluster error reply asks the client to do (docs/scaling.md, Redis Cluster):
 * `MOVED slot host:port` — the slot lives elsewhere now (update the map, go there);
 * `ASK slot host:port` — this one command goes there, preceded by ASKING (slot migrating);
 * `TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN`, `LOADING` — nothing ran; wait briefly and retry.
 */
export type Redirect =
  { kind: "moved" | "ask"; slot: number; addr: string } | { kind: "wait" } | undefined;

export function redirectOf(reply: Reply): Redirect {
  if (reply.kind !== "error") return undefined;
  const m = /^(MOVED|ASK) (\d+) (\S+)$/.exec(reply.value);
  if (m)
    return { kind: m[1] === "MOVED" ? "moved" : "ask", slot: Number(m[2]), addr: m[3] as string };
  if (/^(TRYAGAIN|CLUSTERDOWN|MASTERDOWN|LOADING) /.test(reply.value)) return { kind: "wait" };
  return undefined;
}

const NOT_SENT_CODES = new Set([
  "ECONNREFUSED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/**
 * True when a backend failure certainly happened before the command reached Redis (no
 * connection could be opened), so sending it again cannot run it twice. A connection that died
 * with the command in flight gives no such certainty: only read-only commands are retried then.
 */
export function failedBeforeSending(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== undefined && NOT_SENT_CODES.has(code)) return true;
    if (/connect timed out/.test(e.message)) return true;
  }
  return false;
}

export function isBackendDown(err: unknown): boolean {
  return (
    err instanceof AppError &&
    err.code === "backend_unavailable" &&
    !/shutting down/.test(err.message)
  );
}

/** Exponential back-off between retries inside the failover window: 25 ms doubling to 400 ms. */
export function retryDelay(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.min(400, 25 * 2 ** attempt)));
}
