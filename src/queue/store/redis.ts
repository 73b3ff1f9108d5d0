import type { Config } from "../../config/schema.js";
import type { ScriptTarget } from "../../shared/lua/script.js";
import { ClusterBackend } from "../../shared/redis/cluster/backend.js";
import { BackendFactory, seedsOf } from "../../shared/redis/cluster/factory.js";
import { SlotClient } from "../../shared/redis/cluster/slot-client.js";
import { hashSlot } from "../../shared/redis/cluster/slot.js";
import type { RedisEndpoint } from "../../shared/redis/connection.js";
import { RedisPool, type PoolOptions } from "../../shared/redis/pool.js";
import { ReplicaAck } from "../../shared/redis/replica-ack.js";
import type { Arg, Reply } from "../../shared/redis/resp.js";
import { AppError } from "../../shared/errors.js";
import { prefixOf, queueKeys } from "./keys.js";
import { makePartitions, MAX_PARTITIONS, type Partitions } from "./partitions.js";

/**
 * What the queue's stores need of its Redis: commands (those of one `execMany` call are written
 * together on one connection, in order) and, for the transitions whose acknowledgement a client
 * relies on, `acked`: a script target whose writes are answered only once replicas hold them
 * (see ReplicaAck). A bare RedisPool fits too (tests): then nothing waits for replicas.
 */
export interface QueueRedis extends ScriptTarget {
  execMany(commands: readonly (readonly Arg[])[]): Promise<Reply[]>;
  readonly acked?: ScriptTarget;
}

/**
 * The queue's Redis as the service holds it: partition 0's surface (readiness checks), every
 * partition (store/partitions.ts), and closing.
 */
export interface QueueConnection extends QueueRedis {
  /** "cluster" when STASHD_QUEUE_REDIS_URL names a Redis Cluster node. */
  readonly kind: "single" | "cluster";
  readonly partitions: Partitions;
  close(): Promise<void>;
}

/**
 * Opens the queue Redis at `endpoint`. Whether it is a Redis Cluster is found out as for KV
 * databases (`INFO cluster`, src/shared/redis/cluster/factory.ts); on a cluster every queue
 * command goes to the master owning the slot of the keys' hash tag, following MOVED/ASK and
 * waiting through a failover for up to STASHD_QUEUE_CLUSTER_FAILOVER_WINDOW_MS
 * (docs/scaling.md, The queue on a Redis Cluster). The partition count is read from the queue
 * (or set on its first use, see partitionCount); on a single Redis all partitions share its
 * connections, on a cluster each partition's commands go to the master of its slot.
 */
export async function openQueueRedis(
  config: Config,
  endpoint: RedisEndpoint,
): Promise<QueueConnection> {
  const pool: PoolOptions = {
    size: config.queuePoolSize,
    connectTimeoutMs: config.redisConnectTimeoutMs,
    retryBackoffMs: config.redisRetryBackoffMs,
  };
  const ack = new ReplicaAck({
    replicas: config.queueReplicaAcks,
    timeoutMs: config.queueReplicaAckTimeoutMs,
  });
  const topology =
    endpoint.path === undefined
      ? await new BackendFactory(endpoint, {
          connectTimeoutMs: config.redisConnectTimeoutMs,
          failoverWindowMs: config.queueClusterFailoverWindowMs,
          seeds: seedsOf(config.queueRedisUrl),
        }).detect()
      : undefined;
  // Acknowledged writes get connections of their own: a WAIT holds its connection until the
  // replicas answer, and claims and lease renewals must not queue up behind it.
  if (!topology) {
    const [main, acking] = [new RedisPool(endpoint, pool), new RedisPool(endpoint, pool)];
    const redis: QueueRedis = {
      exec: (argv) => main.exec(argv),
      execMany: (commands) => main.execMany(commands),
      acked: { exec: async (argv) => (await ack.send(acking, [argv]))[0] as Reply },
    };
    const close = async () => void (await Promise.all([main.close(), acking.close()]));
    return withPartitions(config, "single", 1, () => redis, close);
  }
  const opts = { ...pool, failoverWindowMs: config.queueClusterFailoverWindowMs };
  const [main, acking] = [0, 1].map(() => new ClusterBackend(topology, endpoint, opts)) as [
    ClusterBackend,
    ClusterBackend,
  ];
  const slotRedis = (tag: string): QueueRedis => {
    const slot = hashSlot(prefixOf(tag));
    const [plain, acked] = [new SlotClient(main, slot, ack), new SlotClient(acking, slot, ack)];
    return {
      exec: (argv) => plain.exec(argv),
      execMany: (commands) => plain.execMany(commands),
      acked: { exec: (argv) => acked.execAcked(argv) },
    };
  };
  const masters = (await topology.map()).masters.length;
  const close = async () => void (await Promise.all([main.close(), acking.close()]));
  return withPartitions(config, "cluster", masters, slotRedis, close);
}

/** The connection over the partitions; closes the Redis connections when that fails. */
async function withPartitions(
  config: Config,
  kind: "single" | "cluster",
  masters: number,
  redisOf: (tag: string) => QueueRedis,
  close: () => Promise<void>,
): Promise<QueueConnection> {
  try {
    const main = makePartitions(1, redisOf).main.redis;
    const count = await partitionCount(
      main,
      config.queuePartitions,
      kind === "cluster" ? masters : 1,
    );
    const partitions = makePartitions(count, redisOf);
    return { ...partitions.main.redis, kind, partitions, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * The queue's partition count, fixed at its first use: stored in partition 0 then, and read
 * back on every later start. `configured` (STASHD_QUEUE_PARTITIONS) 0 means the default,
 * `byDefault` (one per master on a cluster); a different non-zero setting than the stored count
 * stops the start, since moving state between partitions is not supported. A queue used before
 * partitions existed (partition 0 holds its signing keys but no count) is one partition: it
 * upgrades in place.
 */
export async function partitionCount(
  main: QueueRedis,
  configured: number,
  byDefault: number,
): Promise<number> {
  if (configured < 0 || configured > MAX_PARTITIONS) {
    throw new AppError(
      "invalid_config",
      `STASHD_QUEUE_PARTITIONS must be between 0 and ${MAX_PARTITIONS}`,
    );
  }
  const K = queueKeys;
  const [stored, used] = await main.execMany([
    ["GET", K.partitionCount],
    ["EXISTS", K.signingKeys, K.pending, K.dlq, K.schedules, K.topics],
  ]);
  let count = stored?.kind === "bulk" ? Number(stored.value.toString()) : undefined;
  if (count === undefined) {
    const wanted = used?.kind === "int" && used.value !== "0" ? 1 : configured || byDefault;
    const target = main.acked ?? main;
    await target.exec(["SET", K.partitionCount, String(wanted), "NX"]);
    const now = await main.exec(["GET", K.partitionCount]);
    count = now.kind === "bulk" ? Number(now.value.toString()) : wanted;
  }
  if (configured !== 0 && configured !== count) {
    throw new AppError(
      "startup_failed",
      `STASHD_QUEUE_PARTITIONS is ${configured} but this queue was created with ${count} ` +
        `partition(s); the count is fixed once the queue is used (docs/scaling.md, Queue partitions)`,
    );
  }
  return Math.min(Math.max(1, count), MAX_PARTITIONS);
}
