import { AppError } from "../../shared/errors.js";
import type { Reply } from "../../shared/redis/resp.js";
import { ScriptCode } from "./codes.js";

/**
 * One typed decoder per queue transition (transitions.ts), each reading the reply its script's
 * header contract promises (lua/<name>.lua, "Returns"). A reply of any other shape is a bug in
 * stashd or a foreign script under the same name, never user input or a state to carry on from:
 * `decodeReply` turns it into a 500 `internal` AppError naming the script, what was expected and
 * what came, instead of reading it as 0 or an empty list.
 */
export type Decoder<T> = (reply: Reply) => T;

/** A reply off its script's contract; `decodeReply` adds the script's name. */
class Surprise extends Error {}

export function decodeReply<T>(script: string, reply: Reply, decode: Decoder<T>): T {
  try {
    return decode(reply);
  } catch (err) {
    if (!(err instanceof Surprise)) throw err;
    throw new AppError(
      "internal",
      `queue script ${script} answered off its contract: expected ${err.message}, got ${shown(reply)}`,
    );
  }
}

/** A short rendering of a reply for the error message (values cut at 40 bytes). */
function shown(reply: Reply | undefined): string {
  if (reply === undefined) return "nothing";
  switch (reply.kind) {
    case "int":
      return `integer ${reply.value}`;
    case "nil":
      return "nil";
    case "error":
      return `error ${JSON.stringify(reply.value.slice(0, 40))}`;
    case "array":
      return `[${reply.value.slice(0, 6).map(shown).join(", ")}${reply.value.length > 6 ? ", …" : ""}]`;
    default:
      return `${reply.kind} ${JSON.stringify(reply.value.subarray(0, 40).toString("utf8"))}`;
  }
}

// ---- Reply shapes -------------------------------------------------------------------------

function int(reply: Reply | undefined): number {
  if (reply?.kind !== "int") throw new Surprise("an integer");
  return Number(reply.value);
}

/** An integer >= 0. */
export function count(reply: Reply | undefined): number {
  const n = int(reply);
  if (n < 0) throw new Surprise("a count (>= 0)");
  return n;
}

/** One of `codes` (codes.ts). */
function code<C extends ScriptCode>(reply: Reply | undefined, codes: readonly C[]): C {
  const n = int(reply);
  if (!(codes as readonly number[]).includes(n))
    throw new Surprise(`one of codes ${codes.join(", ")}`);
  return n as C;
}

/** A decoder of one of `codes`. */
export const codes =
  <C extends ScriptCode>(...allowed: C[]): Decoder<C> =>
  (reply) =>
    code(reply, allowed);

/** A decoder of a count (>= 0) or one of the refusal `codes` (< 0). */
export const countOr =
  <C extends ScriptCode>(...refusals: C[]): Decoder<number> =>
  (reply) =>
    int(reply) < 0 ? code(reply, refusals) : count(reply);

function bytes(reply: Reply | undefined): Buffer {
  if (reply?.kind !== "bulk" && reply?.kind !== "simple") throw new Surprise("a string");
  return reply.value;
}

function text(reply: Reply | undefined): string {
  return bytes(reply).toString("utf8");
}

/** A string, or nil (Lua false) where the contract allows nothing. */
function optionalText(reply: Reply | undefined): string | undefined {
  return reply?.kind === "nil" ? undefined : text(reply);
}

function list(reply: Reply | undefined, what = "an array"): Reply[] {
  if (reply?.kind !== "array") throw new Surprise(what);
  return reply.value;
}

/** An array of strings (ids). */
export const texts = (reply: Reply | undefined): string[] =>
  list(reply, "an array of strings").map(text);

// ---- Per-script shapes --------------------------------------------------------------------

/** enqueue.lua: per publish, `ok ''`, `duplicate <stored response>` or `tooManyFlowControlKeys ''`. */
export type EnqueueReply =
  { stored: true } | { stored: false; response: string } | "tooManyFlowControlKeys";

export const enqueueReplies: Decoder<EnqueueReply[]> = (reply) => {
  const flat = list(reply);
  if (flat.length % 2 !== 0) throw new Surprise("pairs of code and response");
  const out: EnqueueReply[] = [];
  for (let i = 0; i < flat.length; i += 2) {
    const c = code(flat[i], [
      ScriptCode.ok,
      ScriptCode.duplicate,
      ScriptCode.tooManyFlowControlKeys,
    ]);
    const response = text(flat[i + 1]);
    if (c === ScriptCode.tooManyFlowControlKeys) out.push("tooManyFlowControlKeys");
    else out.push(c === ScriptCode.ok ? { stored: true } : { stored: false, response });
  }
  return out;
};

/** claim.lua: skipped count, origins at their share, deepest, parked, then id/meta/body/retried. */
export interface ClaimReply {
  skipped: number;
  atShare: string[];
  deepest: number;
  parked: number;
  messages: { id: string; meta: string; body: Buffer; retried: number }[];
}

export const claimReply: Decoder<ClaimReply> = (reply) => {
  const [skipped, atShare, deepest, parked, ...flat] = list(reply);
  if (flat.length % 4 !== 0) throw new Surprise("groups of id, meta, body and retried");
  const messages: ClaimReply["messages"] = [];
  for (let i = 0; i < flat.length; i += 4) {
    messages.push({
      id: text(flat[i]),
      meta: text(flat[i + 1]),
      body: bytes(flat[i + 2]),
      // HMGET's nil (never retried yet) comes as nil.
      retried: Number(optionalText(flat[i + 3]) ?? 0),
    });
  }
  return {
    skipped: count(skipped),
    atShare: texts(atShare),
    deepest: count(deepest),
    parked: count(parked),
    messages,
  };
};

/** depth.lua: a partition's counts by state, read in one moment. */
export interface DepthReply {
  ready: number;
  delayed: number;
  inFlight: number;
  pending: number;
  dlq: number;
  workflowDlq: number;
}

export const depthReply: Decoder<DepthReply> = (reply) => {
  const counts = list(reply, "six counts").map(count);
  if (counts.length !== 6) throw new Surprise("six counts");
  const [ready = 0, delayed = 0, inFlight = 0, pending = 0, dlq = 0, workflowDlq = 0] = counts;
  return { ready, delayed, inFlight, pending, dlq, workflowDlq };
};

/** queue-enqueue.lua: `{ok, admitted}`, `{duplicate, response}` or a refusal. */
export type QueueEnqueueReply =
  | { stored: true; admitted: number }
  | { stored: false; response: string }
  | "tooManyQueues"
  | "tooManyFlowControlKeys";

export const queueEnqueueReply: Decoder<QueueEnqueueReply> = (reply) => {
  const [flag, second] = list(reply);
  const c = code(flag, [
    ScriptCode.ok,
    ScriptCode.duplicate,
    ScriptCode.tooManyQueues,
    ScriptCode.tooManyFlowControlKeys,
  ]);
  if (c === ScriptCode.tooManyQueues) return "tooManyQueues";
  if (c === ScriptCode.tooManyFlowControlKeys) return "tooManyFlowControlKeys";
  if (c === ScriptCode.ok) return { stored: true, admitted: count(second) };
  return { stored: false, response: text(second) };
};

/** topic-update.lua: the group JSON, '' when deleted, or a refusal code. */
export type TopicUpdateReply =
  string | typeof ScriptCode.urlGroupMissing | typeof ScriptCode.tooManyEndpoints;

export const topicUpdateReply: Decoder<TopicUpdateReply> = (reply) =>
  reply.kind === "int"
    ? code(reply, [ScriptCode.urlGroupMissing, ScriptCode.tooManyEndpoints])
    : text(reply);

/** rotate-signing-keys.lua: `{current, next}`. */
export const signingKeysReply: Decoder<{ current: string; next: string }> = (reply) => {
  const [current, next, ...rest] = list(reply);
  if (rest.length > 0) throw new Surprise("two keys");
  return { current: text(current), next: text(next) };
};

/**
 * workflow-start.lua: `{ok}`, `{duplicate, id of the run's first message}` or
 * `{tooManyFlowControlKeys}`.
 */
export const workflowStartReply: Decoder<
  { created: true } | { created: false; firstId: string } | "tooManyFlowControlKeys"
> = (reply) => {
  const [flag, firstId] = list(reply);
  const c = code(flag, [ScriptCode.ok, ScriptCode.duplicate, ScriptCode.tooManyFlowControlKeys]);
  if (c === ScriptCode.tooManyFlowControlKeys) return "tooManyFlowControlKeys";
  if (c === ScriptCode.ok) return { created: true };
  // A run started by an older stashd may have no initId: nil ends the Lua table early.
  return { created: false, firstId: firstId === undefined ? "" : (optionalText(firstId) ?? "") };
};

/** workflow-end.lua: `{unchanged}`, or `{ok, message ids…}`. */
export const workflowEndReply: Decoder<string[] | undefined> = (reply) => {
  const [flag, ...ids] = list(reply);
  if (code(flag, [ScriptCode.ok, ScriptCode.unchanged]) === ScriptCode.unchanged) return undefined;
  return ids.map(text);
};

/** workflow-wait.lua: `{runNotActive}`, `{eventKept, data}`, `{ok}` or `{tooManyFlowControlKeys}`. */
export const workflowWaitReply: Decoder<
  "ended" | "registered" | "tooManyFlowControlKeys" | { kept: string }
> = (reply) => {
  const [flag, data] = list(reply);
  const c = code(flag, [
    ScriptCode.runNotActive,
    ScriptCode.eventKept,
    ScriptCode.ok,
    ScriptCode.tooManyFlowControlKeys,
  ]);
  if (c === ScriptCode.eventKept) return { kept: text(data) };
  if (c === ScriptCode.tooManyFlowControlKeys) return "tooManyFlowControlKeys";
  return c === ScriptCode.ok ? "registered" : "ended";
};

/** workflow-keep.lua: `{runNotActive}`, `{waiting, waiter}`, `{eventKept}` or `{tooManyKept}`. */
export const workflowKeepReply: Decoder<"ended" | "kept" | "full" | { waiter: string }> = (
  reply,
) => {
  const [flag, waiter] = list(reply);
  const c = code(flag, [
    ScriptCode.runNotActive,
    ScriptCode.waiting,
    ScriptCode.eventKept,
    ScriptCode.tooManyKept,
  ]);
  if (c === ScriptCode.waiting) return { waiter: text(waiter) };
  if (c === ScriptCode.eventKept) return "kept";
  return c === ScriptCode.tooManyKept ? "full" : "ended";
};
