import { AppError } from "../../shared/errors.js";
import { hashSlot, SLOT_COUNT } from "../../shared/redis/cluster/slot.js";
import { newMessageId } from "../domain/ids.js";
import { MAIN_TAG, prefixOf, queueKeysFor, type QueueKeys } from "./keys.js";
import type { QueueRedis } from "./redis.js";

/**
 * Queue partitions (docs/scaling.md, Queue partitions). The queue's state is split into `count`
 * partitions, each the whole key layout of keys.ts under its own hash-tagged prefix, so each is
 * one cluster slot and a Redis Cluster spreads them over its masters. Every Lua transition runs
 * inside one partition; what must change together is placed together:
 *
 * - a FIFO queue, a flow-control key, a schedule and a deduplication key belong to the partition
 *   of their name's hash (`ofName`; a `{tag}` in the name is hashed instead, as Redis Cluster
 *   does, so a user can put a queue and a flow-control key together);
 * - a message belongs to the partition of its id's hash (`ofMessage`): messages that must live
 *   with a queue, key or run get ids drawn until they hash there (`newMessageId`), the rest
 *   spread by their random ids;
 * - a workflow run lives where its first message was placed (its flow-control key's partition,
 *   else its id's); its partition is found by looking (see WorkflowStore).
 *
 * One partition is the single-Redis default and keeps the keys stashd had before partitions.
 */
export const MAX_PARTITIONS = 64;

export interface Partition {
  readonly index: number;
  /** The hash tag in every key of the partition. */
  readonly tag: string;
  readonly keys: QueueKeys;
  /** The Redis (on a cluster: the master of the partition's slot) holding the partition. */
  readonly redis: QueueRedis;
}

/** What a new message's partition is decided by (see `place`). */
export interface Placement {
  /** Flow-control keys of the message and its callbacks: these must share one partition. */
  flowControl?: readonly (string | undefined)[];
  /** The FIFO queue it is enqueued to. */
  queue?: string | undefined;
  /** The deduplication key it is stored with. */
  dedup?: string | undefined;
}

/**
 * The hash tags of `count` partitions. Partition 0 keeps MAIN_TAG; the others take the first tag
 * `stashd:q:<i>:<n>` whose slot falls in their own share of the slot space, the shares being
 * `count` equal ranges (partition 0 holds the range its tag falls in). A cluster created with
 * evenly split slots (`redis-cli --cluster create`, `stashd cluster up`) with as many masters as
 * partitions so has one partition on each master.
 */
export function partitionTags(count: number): string[] {
  const rangeOf = (slot: number) => Math.floor((slot * count) / SLOT_COUNT);
  const mainRange = rangeOf(hashSlot(MAIN_TAG));
  const ranges = [...Array(count).keys()].filter((r) => r !== mainRange);
  const tags = [MAIN_TAG];
  for (const [i, range] of ranges.entries()) {
    let n = 0;
    while (rangeOf(hashSlot(`stashd:q:${i + 1}:${n}`)) !== range) n++;
    tags.push(`stashd:q:${i + 1}:${n}`);
  }
  return tags;
}

/** The partitions of a queue Redis, from the Redis each partition's slot lives on. */
export function makePartitions(count: number, redisOf: (tag: string) => QueueRedis): Partitions {
  return new Partitions(
    partitionTags(count).map((tag, index) => ({
      index,
      tag,
      keys: queueKeysFor(prefixOf(tag)),
      redis: redisOf(tag),
    })),
  );
}

export class Partitions {
  constructor(readonly all: readonly Partition[]) {
    if (all.length === 0) throw new Error("a queue needs at least one partition");
  }

  get count(): number {
    return this.all.length;
  }

  /** Partition 0: also holds what exists once (URL groups, signing keys, the partition count). */
  get main(): Partition {
    return this.all[0] as Partition;
  }

  /** The partition of a name (queue, flow-control key, schedule id, run id, dedup key). */
  ofName(name: string): Partition {
    if (this.count === 1) return this.main;
    return this.all[hashSlot(name) % this.count] as Partition;
  }

  /** The partition message `id` lives in. */
  ofMessage(id: string): Partition {
    return this.ofName(id);
  }

  /** A new message id that lives in `p` (any partition when `p` is undefined). */
  newMessageId(p?: Partition): string {
    for (;;) {
      const id = newMessageId();
      if (p === undefined || this.count === 1 || this.ofMessage(id) === p) return id;
    }
  }

  /**
   * Where a new message must live: with its flow-control keys and FIFO queue (all of which must
   * share one partition: 400 otherwise), else with its dedup key; undefined when nothing binds it
   * (its random id then decides).
   */
  place(what: Placement): Partition | undefined {
    if (this.count === 1) return this.main;
    const bound = [...(what.flowControl ?? []), what.queue].filter(
      (n): n is string => n !== undefined,
    );
    const parts = new Set(bound.map((n) => this.ofName(n)));
    if (parts.size > 1) {
      // Queue names cannot hold braces: the key takes the queue's name as its hash tag.
      const tag = what.queue ?? bound[0] ?? "";
      throw new AppError(
        "bad_request",
        `the FIFO queue and flow-control keys ${bound.join(", ")} fall in different queue ` +
          `partitions; give the flow-control key the hash tag {${tag}} (in its name) to keep them together`,
      );
    }
    const [first] = parts;
    if (first) return first;
    return what.dedup === undefined ? undefined : this.ofName(what.dedup);
  }

  /** Runs `fn` on every partition at once; its results in partition order. */
  each<T>(fn: (p: Partition) => Promise<T>): Promise<T[]> {
    return Promise.all(this.all.map(fn));
  }
}

/** One partition with partition 0's keys on `redis` (tests, tools). */
export const singlePartition = (redis: QueueRedis): Partitions => makePartitions(1, () => redis);
