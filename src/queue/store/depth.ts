import type { Reply } from "../../shared/redis/resp.js";
import type { Partition, Partitions } from "./partitions.js";

/** How many messages the queue holds, by state. */
export interface QueueDepth {
  /** Due now, waiting for a delivery slot. */
  ready: number;
  /** Due later (delays, retries' back-off). */
  delayed: number;
  /** Leased: an attempt is running. */
  inFlight: number;
  /** Every message not yet finished (includes FIFO and flow-control waiting lists). */
  pending: number;
  dlq: number;
}

/**
 * Reads the depth with five counting commands per partition in one pipelined round trip each
 * (O(log n) each), summed over the partitions, so polling it every few seconds costs nothing even
 * with 100k messages. Read-only: no message, queue or lease is touched. The one place that counts
 * depth (console and metrics both use it).
 */
export async function readQueueDepth(parts: Partitions): Promise<QueueDepth> {
  const now = Date.now();
  const depths = await parts.each((p) => partitionDepth(p, now));
  const sum = (field: keyof QueueDepth) => depths.reduce((n, d) => n + d[field], 0);
  return {
    ready: sum("ready"),
    delayed: sum("delayed"),
    inFlight: sum("inFlight"),
    pending: sum("pending"),
    dlq: sum("dlq"),
  };
}

async function partitionDepth(p: Partition, now: number): Promise<QueueDepth> {
  const K = p.keys;
  const [ready, delayed, inFlight, pending, dlq] = await p.redis.execMany([
    ["ZCOUNT", K.due, "-inf", String(now)],
    ["ZCOUNT", K.due, `(${now}`, "+inf"],
    ["ZCARD", K.active],
    ["ZCARD", K.pending],
    ["ZCARD", K.dlq],
  ]);
  return {
    ready: replyInt(ready),
    delayed: replyInt(delayed),
    inFlight: replyInt(inFlight),
    pending: replyInt(pending),
    dlq: replyInt(dlq),
  };
}

/** The integer of an integer reply; 0 for anything else (a missing key counts nothing). */
export function replyInt(reply: Reply | undefined): number {
  return reply?.kind === "int" ? Number(reply.value) : 0;
}
