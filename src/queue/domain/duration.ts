import { AppError } from "../../shared/errors.js";

const UNIT_MS: Record<string, number> = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1_000 };

/**
 * Parses a QStash duration (docs/qstash-protocol.md §3.1): concatenated `<int><unit>` groups with
 * units d/h/m/s (`1d10h30m`), or a bare integer meaning seconds. Returns milliseconds.
 */
export function parseDuration(raw: string, header: string): number {
  const text = raw.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!/^(\d+[dhms])+$/.test(text)) {
    throw new AppError("bad_request", `invalid ${header} value: ${JSON.stringify(raw)}`);
  }
  let ms = 0;
  for (const m of text.matchAll(/(\d+)([dhms])/g)) ms += Number(m[1]) * (UNIT_MS[m[2] ?? "s"] ?? 0);
  return ms;
}

const GO_UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * A server-directed delay from a `Retry-After`-family response header (docs/qstash-protocol.md
 * §6.3): seconds, an RFC 1123 date, or a Go duration (`6m5s`). Undefined when unparseable.
 */
export function parseRetryAfter(raw: string, now: number): number | undefined {
  const text = raw.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  if (/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(text)) {
    let ms = 0;
    for (const m of text.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) {
      ms += Number(m[1]) * (GO_UNIT_MS[m[2] ?? "s"] ?? 0);
    }
    return Math.round(ms);
  }
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
