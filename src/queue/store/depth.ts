import type { Reply } from "../../shared/redis/resp.js";
import type { Partition, Partitions } from "./partitions.js";
import { transitions } from "./transitions.js";

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
  /** Message entries in the DLQ (what GET /v2/dlq lists). */
  dlq: number;
  /** Workflow runs' entries (what GET /v2/workflows/dlq lists); they share the DLQ's store. */
  workflowDlq: number;
}

/**
 * Reads the depth with one read-only script per partition (lua/depth.lua: six counting commands,
 * O(log n) each, and one count per parked destination, read in one moment), summed over the partitions, so polling it every few seconds
 * costs nothing even with 100k messages. Read-only: no message, queue or lease is touched. The one place that counts
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
    workflowDlq: sum("workflowDlq"),
  };
}

async function partitionDepth(p: Partition, now: number): Promise<QueueDepth> {
  const K = p.keys;
  const keys = [K.due, K.active, K.pending, K.dlq, K.dlqWorkflow, K.parked];
  return transitions.depth.run(p.redis, keys, [String(now)]);
}

/** The integer of an integer reply; 0 for anything else (a missing key counts nothing). */
export function replyInt(reply: Reply | undefined): number {
  return reply?.kind === "int" ? Number(reply.value) : 0;
}
