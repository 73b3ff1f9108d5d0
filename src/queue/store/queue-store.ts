import type { Partitions } from "./partitions.js";
import { AppError } from "../../shared/errors.js";
import type { QueueRedis } from "./redis.js";
import type { Arg, Reply } from "../../shared/redis/resp.js";
import { queueKeys as K } from "./keys.js";
import { ScriptCode } from "./codes.js";
import type { NewMessage } from "./message-store.js";
import { asArray, asInt, asText, checked } from "./replies.js";
import { transitions } from "./transitions.js";

/**
 * The Queue object of docs/qstash-protocol.md §2.5; every field always present (the Python SDK
 * reads all six).
 */
export interface QueueInfo {
  name: string;
  parallelism: number;
  /** Messages not yet finished: waiting for a slot plus slots in use. */
  lag: number;
  paused: boolean;
  createdAt: number;
  updatedAt: number;
}

/** A queue configuration change; undefined fields are kept. */
export interface QueueChange {
  parallelism?: number | undefined;
  paused?: boolean | undefined;
  /** Create the queue when it does not exist (upsert); otherwise a missing queue is reported. */
  create: boolean;
}

const NIL: Reply = { kind: "nil", array: false };

function messageArgs(m: NewMessage): Arg[] {
  const { meta } = m;
  return [meta.messageId, JSON.stringify(meta), m.body, String(m.dueAt), String(meta.timeoutMs)];
}

/**
 * FIFO queues (one method per Lua transition, lua/queue-*.lua, plus reads). Admission into slots
 * happens inside the scripts; callers wake their dispatcher when a script reports admissions.
 */
export class QueueStore {
  private readonly pool: QueueRedis;

  constructor(
    readonly parts: Partitions,
    private readonly logRetentionMs: number,
    /** A queue is not created when this many exist (412). */
    private readonly maxQueues: number,
  ) {
    this.pool = parts.main.redis;
  }

  private head(now: number): Arg[] {
    return [K.prefix, String(now), String(Math.max(0, now - this.logRetentionMs))];
  }

  /**
   * Appends the messages to queue `name`; with a dedup key already taken, the first response.
   * Throws 412 when the queue does not exist and may not be created (max queues).
   */
  async enqueue(
    now: number,
    name: string,
    messages: NewMessage[],
    dedup?: { key: string; windowMs: number; response: string },
  ): Promise<{ stored: true; admitted: number } | { stored: false; response: string }> {
    const reply = await transitions.queueEnqueue.run(
      this.pool,
      [K.due, K.pending, K.log, K.dedup(dedup?.key ?? "-"), K.queues],
      [
        ...this.head(now),
        dedup ? String(dedup.windowMs) : "0",
        dedup?.response ?? "",
        name,
        String(this.maxQueues),
        ...messages.flatMap(messageArgs),
      ],
    );
    const [flag, second] = asArray(reply);
    const code = flag ? asInt(flag) : undefined;
    if (code === ScriptCode.tooManyQueues) throw this.tooMany();
    if (code === ScriptCode.ok) return { stored: true, admitted: second ? asInt(second) : 0 };
    return { stored: false, response: asText(second) ?? "[]" };
  }

  /**
   * Applies a change; the number of messages it admitted, or undefined when the queue is missing
   * (and not to be created). Throws 412 when creating it would exceed the max queues.
   */
  async configure(now: number, name: string, change: QueueChange): Promise<number | undefined> {
    const paused = change.paused === undefined ? "" : change.paused ? "1" : "0";
    const reply = await transitions.queueConfig.run(
      this.pool,
      [K.queue(name), K.queues, K.due],
      [
        K.prefix,
        String(now),
        name,
        change.parallelism === undefined ? "" : String(change.parallelism),
        paused,
        change.create ? "create" : "",
        String(this.maxQueues),
      ],
    );
    const n = asInt(reply);
    if (n === ScriptCode.tooManyQueues) throw this.tooMany();
    return n === ScriptCode.queueMissing ? undefined : n;
  }

  private tooMany(): AppError {
    return new AppError("precondition_failed", `max number of queues (${this.maxQueues}) reached`);
  }

  /** Deletes the queue and cancels its waiting messages; false when it did not exist. */
  async delete(now: number, name: string): Promise<boolean> {
    const keys = [K.queue(name), K.queues, K.queueWait(name), K.pending, K.log];
    const reply = await transitions.queueDelete.run(this.pool, keys, [...this.head(now), name]);
    return asInt(reply) === ScriptCode.ok;
  }

  async get(name: string): Promise<QueueInfo | undefined> {
    return (await this.getMany([name]))[0];
  }

  /** Every queue, by name. */
  async list(): Promise<QueueInfo[]> {
    const names = asArray(checked(await this.pool.exec(["SMEMBERS", K.queues]), "queues"));
    const sorted = names.map((n) => asText(n) ?? "").sort();
    return this.getMany(sorted);
  }

  private async getMany(names: readonly string[]): Promise<QueueInfo[]> {
    if (names.length === 0) return [];
    const replies = await this.pool.execMany(
      names.flatMap((n) => [
        ["HMGET", K.queue(n), "parallelism", "paused", "createdAt", "updatedAt"],
        ["LLEN", K.queueWait(n)],
        ["HLEN", K.queueSlots(n)],
      ]),
    );
    const out: QueueInfo[] = [];
    for (const [i, name] of names.entries()) {
      const fields = asArray(checked(replies[i * 3] ?? NIL, "queue"));
      const [parallelism, paused, createdAt, updatedAt] = fields.map(asText);
      if (createdAt === undefined) continue;
      const waiting = asInt(checked(replies[i * 3 + 1] ?? NIL, "queue"));
      const running = asInt(checked(replies[i * 3 + 2] ?? NIL, "queue"));
      out.push({
        name,
        parallelism: Number(parallelism ?? 1),
        lag: waiting + running,
        paused: paused === "1",
        createdAt: Number(createdAt),
        updatedAt: Number(updatedAt ?? createdAt),
      });
    }
    return out;
  }
}
