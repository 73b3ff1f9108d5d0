import { AppError } from "../../shared/errors.js";
import { parseDuration } from "./duration.js";

/**
 * A message's flow-control config (docs/qstash-protocol.md §3.3), kept in its meta; the store's Lua
 * (fcEnter) makes it the key's config unless pinned. 0 = no limit; period in seconds.
 */
export interface FlowControl {
  key: string;
  parallelism: number;
  rate: number;
  period: number;
}

const WEEK_S = 7 * 86_400;

/**
 * Parses `Upstash-Flow-Control-Key` / `-Value` (`parallelism=N, rate=N, period=<duration>`).
 * Undefined without a key; 400 on a value without parallelism or rate, or a bad part.
 */
export function parseFlowControl(
  key: string | undefined,
  value: string | undefined,
): FlowControl | undefined {
  if (key === undefined || key.trim() === "") return undefined;
  const fc: FlowControl = { key: key.trim(), parallelism: 0, rate: 0, period: 1 };
  for (const part of (value ?? "").split(",")) {
    if (part.trim() === "") continue;
    const [name = "", raw = ""] = part.split("=", 2).map((s) => s.trim());
    if (name === "parallelism" || name === "rate") fc[name] = positive(raw, name);
    else if (name === "period") fc.period = period(raw);
    else throw invalid(value ?? "");
  }
  if (fc.parallelism === 0 && fc.rate === 0) throw invalid(value ?? "");
  return fc;
}

function positive(raw: string, name: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw invalid(`${name}=${raw}`);
  return Number(raw);
}

function period(raw: string): number {
  const s = Math.floor(parseDuration(raw, "Upstash-Flow-Control-Value") / 1000);
  if (s < 1 || s > WEEK_S) throw invalid(`period=${raw}`);
  return s;
}

function invalid(raw: string): AppError {
  return new AppError(
    "bad_request",
    `invalid Upstash-Flow-Control-Value value: ${JSON.stringify(raw)}`,
  );
}
