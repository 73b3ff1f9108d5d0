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
import { QUEUE_PREFIX } from "./keys.js";

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

/** The queue's Redis as the service holds it: the stores' surface plus closing. */
export interface QueueConnection extends QueueRedis {
  /** "cluster" when STASHD_QUEUE_REDIS_URL names a Redis Cluster node. */
  readonly kind: "single" | "cluster";
  close(): Promise<void>;
}

/**
 * Opens the queue Redis at `endpoint`. Whether it is a Redis Cluster is found out as for KV
 * databases (`INFO cluster`, src/shared/redis/cluster/factory.ts); on a cluster every queue
 * command goes to the master owning the slot of the keys' hash tag, following MOVED/ASK and
 * waiting through a failover for up to STASHD_QUEUE_CLUSTER_FAILOVER_WINDOW_MS
 * (docs/scaling.md, The queue on a Redis Cluster).
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
  if (!topology) return onSingle(new RedisPool(endpoint, pool), new RedisPool(endpoint, pool), ack);
  const opts = { ...pool, failoverWindowMs: config.queueClusterFailoverWindowMs };
  const backends = [0, 1].map(() => new ClusterBackend(topology, endpoint, opts));
  const [main, acking] = backends.map((b) => new SlotClient(b, hashSlot(QUEUE_PREFIX), ack));
  return {
    kind: "cluster",
    exec: (argv) => (main as SlotClient).exec(argv),
    execMany: (commands) => (main as SlotClient).execMany(commands),
    acked: { exec: (argv) => (acking as SlotClient).execAcked(argv) },
    close: async () => void (await Promise.all(backends.map((b) => b.close()))),
  };
}

function onSingle(pool: RedisPool, ackPool: RedisPool, ack: ReplicaAck): QueueConnection {
  return {
    kind: "single",
    exec: (argv) => pool.exec(argv),
    execMany: (commands) => pool.execMany(commands),
    acked: { exec: async (argv) => (await ack.send(ackPool, [argv]))[0] as Reply },
    close: async () => void (await Promise.all([pool.close(), ackPool.close()])),
  };
}
