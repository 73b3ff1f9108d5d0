import type { Arg, Reply } from "../../shared/redis/resp.js";
import { isNoScript, LuaScript } from "../../shared/lua/script.js";
import type { QueueRedis } from "./redis.js";
import { checked } from "./replies.js";

/**
 * The queue's state transitions: one Lua script each, in lua/<name>.lua (its header gives the
 * contract: KEYS, ARGV, returns, events), with the helpers of lua/includes/ it names. Loaded when
 * this module is first imported, so a missing file or include stops the start at once.
 *
 * An `acked` transition is one whose success the API reports to a client (a publish's 201, a
 * schedule saved): it runs through the Redis's `acked` target, which answers only once replicas
 * hold the write (docs/scaling.md, Failover). Delivery-side transitions (claim, finish, reap...)
 * are not: losing one in a failover means a repeated delivery, which at-least-once allows.
 */
export class Transition {
  constructor(
    readonly script: LuaScript,
    readonly acked: boolean,
  ) {}

  /** Runs the script (loading it on NOSCRIPT); a Redis error becomes a 503 AppError. */
  async run(redis: QueueRedis, keys: readonly string[], args: readonly Arg[]): Promise<Reply> {
    const target = this.acked ? (redis.acked ?? redis) : redis;
    return checked(await this.script.run(target, keys, args), this.script.name);
  }
}

/**
 * Calls `t` once per argument list in `calls` (same keys), as one pipeline on one connection;
 * a reply each, in order (a Redis error rejects only its own call). A call Redis answers with
 * NOSCRIPT is repeated through `run`, which loads the script. Not for `acked` transitions.
 */
export function pipeline(
  pool: QueueRedis,
  t: Transition,
  keys: readonly string[],
  calls: readonly (readonly Arg[])[],
): Promise<Reply>[] {
  const replies = pool.execMany(calls.map((args) => t.script.command("sha", keys, args)));
  return calls.map(async (args, i) => {
    const reply = (await replies)[i] as Reply;
    return isNoScript(reply) ? t.run(pool, keys, args) : checked(reply, t.script.name);
  });
}

/** Marks a transition whose result a client is told (see Transition). */
const ACKED = { acked: true };

const load = (name: string, opts = { acked: false }): Transition =>
  new Transition(LuaScript.fromFile(new URL(`./lua/${name}.lua`, import.meta.url)), opts.acked);

export const transitions = {
  enqueue: load("enqueue", ACKED),
  claim: load("claim"),
  finish: load("finish"),
  reap: load("reap"),
  renew: load("renew"),
  cancel: load("cancel", ACKED),
  dlqRetry: load("dlq-retry", ACKED),
  dlqDelete: load("dlq-delete", ACKED),
  dlqIndex: load("dlq-index"),
  /** Read-only: the depth counts of a partition in one moment (store/depth.ts). */
  depth: load("depth"),
  queueEnqueue: load("queue-enqueue", ACKED),
  queueConfig: load("queue-config", ACKED),
  queueDelete: load("queue-delete", ACKED),
  flowControlManage: load("flow-control-manage", ACKED),
  scheduleSave: load("schedule-save", ACKED),
  scheduleClaim: load("schedule-claim"),
  scheduleAdvance: load("schedule-advance"),
  schedulePause: load("schedule-pause", ACKED),
  scheduleDelete: load("schedule-delete", ACKED),
  topicUpdate: load("topic-update", ACKED),
  topicDelete: load("topic-delete", ACKED),
  rotateSigningKeys: load("rotate-signing-keys", ACKED),
  workflowStart: load("workflow-start", ACKED),
  workflowAppend: load("workflow-append"),
  workflowEnd: load("workflow-end"),
  workflowWait: load("workflow-wait"),
  workflowRelease: load("workflow-release"),
  workflowKeep: load("workflow-keep"),
} as const;
