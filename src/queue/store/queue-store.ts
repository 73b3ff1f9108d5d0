import { randomBytes } from "node:crypto";
import { AppError } from "../../shared/errors.js";
import { nextTurn } from "../../shared/time-slice.js";
import type { Arg, Reply } from "../../shared/redis/resp.js";
import type { Partition, Partitions } from "./partitions.js";
import { groupBy } from "./spread.js";
import { ScriptCode } from "./codes.js";
import {
  fcKeysPerPartition,
  flowControlKeysFull,
  messageArgs,
  type NewMessage,
} from "./message-store.js";
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

/** Waiting messages of a deleted queue cancelled per script (about 10 ms of Redis each). */
const DRAIN_STEP = 200;

/**
 * FIFO queues (one method per Lua transition, lua/queue-*.lua, plus reads). Admission into slots
 * happens inside the scripts; callers wake their dispatcher when a script reports admissions.
 *
 * A queue lives in the partition of its name (Partitions.ofName), with its messages (their ids
 * are placed there, see produce.ts). The max-queues limit counts every partition's queues: a
 * script may create a queue only while its own partition holds fewer than the limit minus the
 * others' count, read just before; two creates racing in different partitions may so pass the
 * limit by one each.
 */
export class QueueStore {
  constructor(
    readonly parts: Partitions,
    private readonly logRetentionMs: number,
    /** A queue is not created when this many exist (412). */
    private readonly maxQueues: number,
    /** STASHD_QUEUE_MAX_FLOW_CONTROL_KEYS: an enqueue naming one more key is refused (412). */
    private readonly maxFlowControlKeys = 10_000,
  ) {}

  private head(p: Partition, now: number): Arg[] {
    return [p.keys.prefix, String(now), String(Math.max(0, now - this.logRetentionMs))];
  }

  /**
   * Appends the messages (ids placed in the queue's partition) to queue `name`; with a dedup key
   * already taken, the first response. Throws 412 when the queue does not exist and may not be
   * created (max queues).
   */
  async enqueue(
    now: number,
    name: string,
    messages: NewMessage[],
    dedup?: { key: string; windowMs: number; response: string },
  ): Promise<{ stored: true; admitted: number } | { stored: false; response: string }> {
    const p = this.parts.ofName(name);
    const K = p.keys;
    const reply = await this.creating(
      p,
      (maxQueues) =>
        transitions.queueEnqueue.run(
          p.redis,
          [K.due, K.pending, K.log, K.dedup(dedup?.key ?? "-"), K.queues],
          [
            ...this.head(p, now),
            dedup ? String(dedup.windowMs) : "0",
            dedup?.response ?? "",
            name,
            String(maxQueues),
            fcKeysPerPartition(this.maxFlowControlKeys, this.parts),
            ...messages.flatMap(messageArgs),
          ],
        ),
      (r) => r === "tooManyQueues",
    );
    if (reply === "tooManyQueues") throw this.tooMany();
    if (reply === "tooManyFlowControlKeys") throw flowControlKeysFull(this.maxFlowControlKeys);
    return reply;
  }

  /**
   * Runs a script that may create a queue in `p`, given how many queues `p` may hold. With one
   * partition that is the limit. With more, the script first runs allowed no creation (an
   * existing queue, the common case, costs nothing more); only when it refused is it run again
   * with the limit less the other partitions' queues.
   */
  private async creating<T>(
    p: Partition,
    run: (maxQueues: number) => Promise<T>,
    tooMany: (result: T) => boolean,
  ): Promise<T> {
    if (this.parts.count === 1) return run(this.maxQueues);
    const first = await run(0);
    if (!tooMany(first)) return first;
    const others = await this.parts.each((q) =>
      q === p
        ? Promise.resolve(0)
        : q.redis.exec(["SCARD", q.keys.queues]).then((r) => asInt(checked(r, "queues"))),
    );
    return run(Math.max(0, this.maxQueues - others.reduce((a, b) => a + b, 0)));
  }

  /**
   * Applies a change; the number of messages it admitted, or undefined when the queue is missing
   * (and not to be created). Throws 412 when creating it would exceed the max queues.
   */
  async configure(now: number, name: string, change: QueueChange): Promise<number | undefined> {
    const p = this.parts.ofName(name);
    const K = p.keys;
    const paused = change.paused === undefined ? "" : change.paused ? "1" : "0";
    const reply = await this.creating(
      p,
      (maxQueues) =>
        transitions.queueConfig.run(
          p.redis,
          [K.queue(name), K.queues, K.due],
          [
            K.prefix,
            String(now),
            name,
            change.parallelism === undefined ? "" : String(change.parallelism),
            paused,
            change.create ? "create" : "",
            String(maxQueues),
          ],
        ),
      (n) => n === ScriptCode.tooManyQueues,
    );
    const n = reply;
    if (n === ScriptCode.tooManyQueues) throw this.tooMany();
    return n === ScriptCode.queueMissing ? undefined : n;
  }

  private tooMany(): AppError {
    return new AppError("precondition_failed", `max number of queues (${this.maxQueues}) reached`);
  }

  /**
   * Deletes the queue and cancels its waiting messages; false when it did not exist. The queue
   * is gone at the first script; its waiting messages (a renamed list) are cancelled DRAIN_STEP
   * at a time, one short script each with a turn of the event loop between, so that a queue of
   * 200,000 messages holds neither Redis (11 s in one script before) nor this process.
   */
  async delete(now: number, name: string): Promise<boolean> {
    const p = this.parts.ofName(name);
    const K = p.keys;
    const drain = K.queueDrain(`${name}:${randomBytes(9).toString("base64url")}`);
    const keys = [K.queue(name), K.queues, K.queueWait(name), K.pending, K.log];
    const args = [...this.head(p, now), name, String(DRAIN_STEP)];
    const left = await transitions.queueDelete.run(p.redis, [...keys, drain, K.queueDrains], args);
    if (left === ScriptCode.queueMissing) return false;
    if (left > 0) await this.drain(p, drain);
    return true;
  }

  /** Cancels what is left in drain list `drain`, a step at a time. */
  private async drain(p: Partition, drain: string): Promise<void> {
    const K = p.keys;
    for (let left = 1; left > 0;) {
      await nextTurn();
      const args = [...this.head(p, Date.now()), String(DRAIN_STEP)];
      left = await transitions.queueDrain.run(
        p.redis,
        [drain, K.pending, K.log, K.queueDrains],
        args,
      );
    }
  }

  /**
   * Finishes the deletions a stopped process left half done (drain lists still in `qdrains`).
   * Run at start; two processes draining one list at once each take their own steps.
   */
  async drainLeft(): Promise<void> {
    await this.parts.each(async (p) => {
      const reply = checked(await p.redis.exec(["SMEMBERS", p.keys.queueDrains]), "queue drains");
      for (const drain of asArray(reply).map((d) => asText(d) ?? "")) await this.drain(p, drain);
    });
  }

  async get(name: string): Promise<QueueInfo | undefined> {
    return (await this.getMany([name]))[0];
  }

  /** Every queue of every partition, by name. */
  async list(): Promise<QueueInfo[]> {
    const names = await this.parts.each(async (p) => {
      const reply = checked(await p.redis.exec(["SMEMBERS", p.keys.queues]), "queues");
      return asArray(reply).map((n) => asText(n) ?? "");
    });
    return this.getMany(names.flat().sort());
  }

  /** The existing queues among `names`, in order. */
  private async getMany(names: readonly string[]): Promise<QueueInfo[]> {
    const groups = groupBy(names, (n) => this.parts.ofName(n));
    const found = new Map<string, QueueInfo>();
    await Promise.all(
      [...groups].map(async ([p, group]) => {
        for (const q of await readQueues(p, group)) found.set(q.name, q);
      }),
    );
    return names.flatMap((n) => found.get(n) ?? []);
  }
}

/** The existing queues among `names`, all of partition `p`. */
async function readQueues(p: Partition, names: readonly string[]): Promise<QueueInfo[]> {
  const K = p.keys;
  const replies = await p.redis.execMany(
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
