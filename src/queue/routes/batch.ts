import { AppError, isAppError } from "../../shared/errors.js";
import { parseBoundedJson } from "../../shared/json-bound.js";
import { TimeSlice } from "../../shared/time-slice.js";
import type { QueueContext } from "./context.js";
import type { ConfigValues } from "../domain/publish-options.js";
import type { Handler, QueueRequest } from "./context.js";
import { parseDestination } from "./publish-request.js";
import { checkQueueName, submit, type Submission } from "./submit.js";
import { readRaw, reply } from "./util.js";
import { isWorkflowItem, produceWorkflow } from "../workflow/engine/produce.js";

type Item = Record<string, unknown>;
type ItemHeaders = Record<string, string>;

/**
 * POST /v2/batch (docs/qstash-protocol.md §2.3): a JSON array of `{destination, headers, body,
 * queue}`, each a publish (or an enqueue with `queue`). Accepts the JS shape (lower-case header
 * keys, `body`/`queue` omitted), Python's (`null`) and Go's (`""`, an empty queue meaning none).
 * Answers 201 with an array in request order: per item what publish answers (an object, or an array
 * for a URL group) or `{"error": ...}` for an item that was refused while the others were stored.
 * The whole batch is limited to the maximum message size, its JSON values and items by settings
 * (parseItems). A body that is not a JSON array is a 400. Items are stored one after another; an
 * item refused without a Redis call (a bad field) costs no await, so the loop passes the event
 * loop on every few milliseconds (TimeSlice).
 */
export const batch: Handler = async (ctx, r) => {
  const items = parseItems(ctx, await readRaw(ctx, r));
  if (items.some(isWorkflowItem)) {
    reply(
      r.res,
      201,
      await produceWorkflow(
        ctx,
        items.map((i) => submission(r, i)),
      ),
    );
    return;
  }
  const out: unknown[] = [];
  const slice = new TimeSlice();
  for (const item of items) {
    await slice.pass();
    try {
      out.push((await submit(ctx, submission(r, item))).value);
    } catch (err) {
      if (!isAppError(err) || err.status >= 500) throw err;
      out.push({ error: err.message });
    }
  }
  reply(r.res, 201, out);
};

/**
 * A JSON array body of at most STASHD_QUEUE_MAX_BATCH_ITEMS items, its values counted before it
 * is parsed (json-bound.ts); 400 otherwise. Also read by the workflow batch trigger.
 */
export function parseItems(ctx: QueueContext, raw: Buffer): unknown[] {
  const { queueMaxJsonValues, queueMaxBatchItems } = ctx.config;
  const value = parseBoundedJson(raw, queueMaxJsonValues, "STASHD_QUEUE_MAX_JSON_VALUES");
  if (!Array.isArray(value)) throw new AppError("bad_request", "batch body must be a JSON array");
  if (value.length > queueMaxBatchItems) {
    throw new AppError(
      "bad_request",
      `batch has ${value.length} items, at most ${queueMaxBatchItems} (STASHD_QUEUE_MAX_BATCH_ITEMS)`,
    );
  }
  return value;
}

export function submission(r: QueueRequest, raw: unknown): Submission {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new AppError("bad_request", "batch item must be a JSON object");
  }
  const item = raw as Item;
  const target = item["destination"];
  if (typeof target !== "string" || target === "") {
    throw new AppError("bad_request", "batch item needs a destination");
  }
  const headers = itemHeaders(item["headers"]);
  const q = target.indexOf("?");
  // parseDestination reads the path after its first segment and the raw query string.
  const { destination, group } = parseDestination({
    ...r,
    rawPath: `batch/${q === -1 ? target : target.slice(0, q)}`,
    rawQuery: q === -1 ? "" : target.slice(q + 1),
  });
  const queue = optionalString(item["queue"], "queue");
  return {
    destination,
    group,
    config: (defaults) => itemConfig(headers, defaults),
    requestHeaders: headers,
    body: Buffer.from(optionalString(item["body"], "body") ?? "", "utf8"),
    queue: queue === undefined ? undefined : checkQueueName(queue),
    callerIP: r.req.socket.remoteAddress,
  };
}

/** Header map with lower-case keys; array values (any client) are joined with commas. */
function itemHeaders(value: unknown): ItemHeaders {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new AppError("bad_request", "batch item headers must be an object");
  }
  const out: ItemHeaders = {};
  for (const [name, v] of Object.entries(value as Record<string, unknown>)) {
    out[name.toLowerCase()] = Array.isArray(v) ? v.map(String).join(",") : String(v);
  }
  return out;
}

/** `null`, `""` or absent mean none. */
function optionalString(value: unknown, what: string): string | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string")
    throw new AppError("bad_request", `batch item ${what} not a string`);
  return value;
}

/** The URL group's default headers overridden by the item's `Upstash-*` and Content-Type. */
function itemConfig(headers: ItemHeaders, defaults?: Record<string, string[]>): ConfigValues {
  const cfg: ConfigValues = new Map();
  for (const [name, values] of Object.entries(defaults ?? {})) {
    cfg.set(name.toLowerCase(), (Array.isArray(values) ? values : [values]).join(","));
  }
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith("upstash-") || name === "content-type") cfg.set(name, value);
  }
  return cfg;
}
