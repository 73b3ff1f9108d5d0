import { AppError } from "../../shared/errors.js";
import { checkUrl, type ConfigValues } from "../domain/publish-options.js";
import type { QueueRequest } from "./context.js";
import { decode } from "./util.js";

/**
 * What a publish-like request (publish, batch entry, schedule, workflow trigger, DLQ retry)
 * names: its destination and its `Upstash-*` configuration. Its own module, not publish.ts, so
 * the workflow routes that publish.ts hands workflow publishes to can use it without an import
 * cycle (test/architecture/cycles.test.ts).
 */

const GROUP_NAME = /^[A-Za-z0-9_.-]+$/;

/** The destination URL (path remainder + non-config query) or a URL group name. */
export function parseDestination(r: Pick<QueueRequest, "rawPath" | "rawQuery">): {
  destination: string;
  group?: string;
} {
  let rest = r.rawPath.slice(r.rawPath.indexOf("/") + 1);
  if (/^https?%3a/i.test(rest)) rest = decode(rest);
  if (/^https?:\/\//i.test(rest)) {
    const own = ownQuery(r.rawQuery);
    const destination = own ? `${rest}${rest.includes("?") ? "&" : "?"}${own}` : rest;
    return { destination: checkUrl(destination, "destination") };
  }
  if (GROUP_NAME.test(rest)) return { destination: rest, group: rest };
  throw new AppError(
    "bad_request",
    "invalid destination url: endpoint has invalid scheme, add http:// or https://",
  );
}

/** The query parameters that belong to the destination: all but `qstash_token` and `upstash-*`. */
function ownQuery(rawQuery: string): string {
  return rawQuery
    .split("&")
    .filter((part) => part !== "" && !isConfigKey(decode(part.split("=")[0] ?? "")))
    .join("&");
}

const isConfigKey = (key: string): boolean => {
  const k = key.toLowerCase();
  return k === "qstash_token" || k.startsWith("upstash-");
};

/** Group defaults, overridden by `upstash-*` query parameters, overridden by request headers. */
export function configValues(
  r: Pick<QueueRequest, "query" | "headers">,
  defaults?: Record<string, string[]>,
): ConfigValues {
  const cfg: ConfigValues = new Map();
  for (const [name, values] of Object.entries(defaults ?? {})) {
    cfg.set(name.toLowerCase(), (Array.isArray(values) ? values : [values]).join(","));
  }
  for (const [name, value] of r.query) {
    if (isConfigKey(name) && name.toLowerCase() !== "qstash_token")
      cfg.set(name.toLowerCase(), value);
  }
  for (const [name, value] of Object.entries(r.headers)) {
    if (value === undefined) continue;
    if (name.startsWith("upstash-") || name === "content-type") {
      cfg.set(name, Array.isArray(value) ? value.join(",") : value);
    }
  }
  return cfg;
}
