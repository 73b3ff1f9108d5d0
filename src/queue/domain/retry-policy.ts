import { parseRetryAfter } from "./duration.js";
import type { AttemptResult } from "./message.js";
import { compileRetryDelay } from "./retry-delay.js";

const DAY_MS = 86_400_000;
const SERVER_DELAY_HEADERS = [
  "Retry-After",
  "X-Ratelimit-Reset",
  "X-Ratelimit-Reset-Requests",
  "X-Ratelimit-Reset-Tokens",
];

/** Only 2xx is success (docs/qstash-protocol.md §6.1). */
export const isSuccess = (r: AttemptResult): boolean => r.status >= 200 && r.status < 300;

/** 489 with `Upstash-NonRetryable-Error: true` fails at once (docs/qstash-protocol.md §6.4). */
export function isNonRetryable(r: AttemptResult): boolean {
  const flag = r.header["Upstash-Nonretryable-Error"]?.[0];
  return r.status === 489 && flag?.trim().toLowerCase() === "true";
}

/**
 * Delay before retry number `retried + 1` (docs/qstash-protocol.md §6.2/§6.3): a
 * `Retry-After`-family response header when it says at most a day; else the `Upstash-Retry-Delay`
 * expression (ms); else the default min(86400, e^(2.5n)) in units of `scaleMs` (1000 in production:
 * seconds).
 */
export function retryDelayMs(
  r: AttemptResult,
  retried: number,
  expression: string | undefined,
  scaleMs: number,
  now: number,
): number {
  for (const name of SERVER_DELAY_HEADERS) {
    const raw = r.header[name]?.[0];
    const ms = raw === undefined ? undefined : parseRetryAfter(raw, now);
    if (ms !== undefined && ms <= DAY_MS) return ms;
  }
  if (expression !== undefined) return compileRetryDelay(expression)(retried);
  return Math.round(Math.min(86_400, Math.exp(2.5 * (retried + 1))) * scaleMs);
}
