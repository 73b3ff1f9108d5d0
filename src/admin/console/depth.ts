import { queueKeys as K } from "../../queue/store/keys.js";
import type { RedisPool } from "../../shared/redis/pool.js";
import type { Reply } from "../../shared/redis/resp.js";

/** Queue depth for the console's live counts. */
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
 * queue or lease is touched. The queue API has no count endpoint, hence the direct read.
 */
export function queueDepthReader(pool: RedisPool): () => Promise<QueueDepth> {
  return async () => {
    const now = String(Date.now());
    const [ready, delayed, inFlight, pending, dlq] = await pool.execMany([
      ["ZCOUNT", K.due, "-inf", now],
      ["ZCOUNT", K.due, `(${now}`, "+inf"],
      ["ZCARD", K.active],
      ["ZCARD", K.pending],
      ["ZCARD", K.dlq],
    ]);
    return {
      ready: int(ready),
      delayed: int(delayed),
      inFlight: int(inFlight),
      pending: int(pending),
      dlq: int(dlq),
    };
  };
}

function int(reply: Reply | undefined): number {
  return reply?.kind === "int" ? Number(reply.value) : 0;
}
