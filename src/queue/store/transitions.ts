import type { RedisPool } from "../../shared/redis/pool.js";
import type { Arg, Reply } from "../../shared/redis/resp.js";
import { LuaScript } from "../../shared/lua/script.js";
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
