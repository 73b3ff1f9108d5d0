import type { Arg, Reply } from "../../shared/redis/resp.js";
import { isNoScript, LuaScript } from "../../shared/lua/script.js";
import type { QueueRedis } from "./redis.js";
import { checked } from "./replies.js";
import { ScriptCode as C } from "./codes.js";
import * as R from "./script-replies.js";

/**
 * The queue's state transitions: one Lua script each, in lua/<name>.lua (its header gives the
 * contract: KEYS, ARGV, returns, events), with the helpers of lua/includes/ it names. Loaded when
 * this module is first imported, so a missing file or include stops the start at once. Each
 * reply is read by the script's decoder (script-replies.ts), which throws on a reply off the
 * contract rather than reading it as 0 or an empty list.
 *
 * An `acked` transition is one whose success the API reports to a client (a publish's 201, a
 * schedule saved): it runs through the Redis's `acked` target, which answers only once replicas
 * hold the write (docs/scaling.md, Failover). Delivery-side transitions (claim, finish, reap...)
 * are not: losing one in a failover means a repeated delivery, which at-least-once allows.
 */
export class Transition<T> {
  constructor(
    readonly script: LuaScript,
    readonly acked: boolean,
    private readonly decode: R.Decoder<T>,
  ) {}

  /**
   * Runs the script (loading it on NOSCRIPT); a Redis error becomes a 503 AppError, a reply off
   * the script's contract a 500 one.
   */
  async run(redis: QueueRedis, keys: readonly string[], args: readonly Arg[]): Promise<T> {
    const target = this.acked ? (redis.acked ?? redis) : redis;
    return this.decoded(await this.script.run(target, keys, args));
  }

  /** The reply's typed result (see `run`). */
  decoded(reply: Reply): T {
    const name = this.script.name;
    return R.decodeReply(name, checked(reply, name), this.decode);
  }
}

/**
 * Calls `t` once per argument list in `calls` (same keys), as one pipeline on one connection;
 * a reply each, in order (a Redis error rejects only its own call). A call Redis answers with
 * NOSCRIPT is repeated through `run`, which loads the script. Not for `acked` transitions.
 */
export function pipeline<T>(
  pool: QueueRedis,
  t: Transition<T>,
  keys: readonly string[],
  calls: readonly (readonly Arg[])[],
): Promise<T>[] {
  const replies = pool.execMany(calls.map((args) => t.script.command("sha", keys, args)));
  return calls.map(async (args, i) => {
    const reply = (await replies)[i] as Reply;
    return isNoScript(reply) ? t.run(pool, keys, args) : t.decoded(reply);
  });
}

/** Marks a transition whose result a client is told (see Transition). */
const ACKED = true;

const load = <T>(name: string, decode: R.Decoder<T>, acked = false): Transition<T> =>
  new Transition(LuaScript.fromFile(new URL(`./lua/${name}.lua`, import.meta.url)), acked, decode);

/** `ok`, or `unchanged` when there was nothing to change: true when done. */
const done: R.Decoder<boolean> = (reply) => R.codes(C.ok, C.unchanged)(reply) === C.ok;

export const transitions = {
  enqueue: load("enqueue", R.enqueueReplies, ACKED),
  claim: load("claim", R.claimReply),
  finish: load("finish", R.codes(C.ok, C.canceled, C.leaseLost)),
  reap: load("reap", R.count),
  renew: load("renew", R.texts),
  cancel: load("cancel", R.count, ACKED),
  dlqRetry: load("dlq-retry", done, ACKED),
  dlqDelete: load("dlq-delete", R.count, ACKED),
  dlqIndex: load("dlq-index", R.count),
  /** Read-only: the depth counts of a partition in one moment (store/depth.ts). */
  depth: load("depth", R.depthReply),
  queueEnqueue: load("queue-enqueue", R.queueEnqueueReply, ACKED),
  queueConfig: load("queue-config", R.countOr(C.queueMissing, C.tooManyQueues), ACKED),
  queueDelete: load("queue-delete", R.countOr(C.queueMissing), ACKED),
  queueDrain: load("queue-drain", R.count, ACKED),
  flowControlManage: load("flow-control-manage", R.countOr(C.flowControlKeyMissing), ACKED),
  scheduleSave: load("schedule-save", R.codes(C.ok, C.tooManySchedules), ACKED),
  scheduleClaim: load("schedule-claim", R.texts),
  scheduleAdvance: load("schedule-advance", done),
  schedulePause: load("schedule-pause", done, ACKED),
  scheduleDelete: load("schedule-delete", done, ACKED),
  topicUpdate: load("topic-update", R.topicUpdateReply, ACKED),
  topicDelete: load("topic-delete", R.count, ACKED),
  rotateSigningKeys: load("rotate-signing-keys", R.signingKeysReply, ACKED),
  workflowStart: load("workflow-start", R.workflowStartReply, ACKED),
  workflowAppend: load(
    "workflow-append",
    R.codes(C.ok, C.runNotActive, C.tooManySteps, C.tooManyFlowControlKeys),
  ),
  workflowEnd: load("workflow-end", R.workflowEndReply),
  workflowWait: load("workflow-wait", R.workflowWaitReply),
  workflowRelease: load(
    "workflow-release",
    R.codes(C.ok, C.duplicate, C.unchanged, C.runNotActive),
  ),
  workflowKeep: load("workflow-keep", R.workflowKeepReply),
} as const;
