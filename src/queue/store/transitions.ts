import type { RedisPool } from "../../shared/redis/pool.js";
import type { Arg, Reply } from "../../shared/redis/resp.js";
import { isNoScript, LuaScript } from "../../shared/lua/script.js";
import { checked } from "./replies.js";

/**
 * The queue's state transitions: one Lua script each, in lua/<name>.lua (its header gives the
 * contract: KEYS, ARGV, returns, events), with the helpers of lua/includes/ it names. Loaded when
 * this module is first imported, so a missing file or include stops the start at once.
 */
export class Transition {
  constructor(readonly script: LuaScript) {}

  /** Runs the script (loading it on NOSCRIPT); a Redis error becomes a 503 AppError. */
  async run(pool: RedisPool, keys: readonly string[], args: readonly Arg[]): Promise<Reply> {
    return checked(await this.script.run(pool, keys, args), this.script.name);
  }
}

/**
 * Calls `t` once per argument list in `calls` (same keys), as one pipeline on one connection;
 * a reply each, in order (a Redis error rejects only its own call). A call Redis answers with
 * NOSCRIPT is repeated through `run`, which loads the script.
 */
export function pipeline(
  pool: RedisPool,
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

const load = (name: string): Transition =>
  new Transition(LuaScript.fromFile(new URL(`./lua/${name}.lua`, import.meta.url)));

export const transitions = {
  enqueue: load("enqueue"),
  claim: load("claim"),
  finish: load("finish"),
  reap: load("reap"),
  renew: load("renew"),
  cancel: load("cancel"),
  dlqRetry: load("dlq-retry"),
  dlqDelete: load("dlq-delete"),
  queueEnqueue: load("queue-enqueue"),
  queueConfig: load("queue-config"),
  queueDelete: load("queue-delete"),
  flowControlManage: load("flow-control-manage"),
  scheduleSave: load("schedule-save"),
  scheduleClaim: load("schedule-claim"),
  scheduleAdvance: load("schedule-advance"),
  schedulePause: load("schedule-pause"),
  scheduleDelete: load("schedule-delete"),
  topicUpdate: load("topic-update"),
  topicDelete: load("topic-delete"),
  rotateSigningKeys: load("rotate-signing-keys"),
  workflowStart: load("workflow-start"),
  workflowAppend: load("workflow-append"),
  workflowEnd: load("workflow-end"),
  workflowWait: load("workflow-wait"),
  workflowRelease: load("workflow-release"),
  workflowKeep: load("workflow-keep"),
} as const;
