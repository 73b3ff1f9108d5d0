import type { QueueRedis } from "./redis.js";
import type { Reply } from "../../shared/redis/resp.js";
import { queueKeys as K } from "./keys.js";

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
 * Reads the depth with five counting commands in one pipelined round trip (O(log n) each), so
 * polling it every few seconds costs nothing even with 100k messages. Read-only: no message,
 * queue or lease is touched. The one place that counts depth (console and metrics both use it).
 */
export async function readQueueDepth(pool: QueueRedis): Promise<QueueDepth> {
  const now = String(Date.now());
  const [ready, delayed, inFlight, pending, dlq] = await pool.execMany([
    ["ZCOUNT", K.due, "-inf", now],
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
