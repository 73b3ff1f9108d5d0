import { Gauge, Registry } from "prom-client";
import { readQueueDepth, replyInt } from "../queue/store/depth.js";
import type { Partition, Partitions } from "../queue/store/partitions.js";
import type { Reply } from "../shared/redis/resp.js";

/**
 * Queue depth read from the queue Redis at scrape time (cheap counting commands, one pipelined
 * round trip per step) rather than tracked in memory, so every process reports the shared truth
 * and nothing drifts across restarts. A scrape while Redis is down reports no queue gauges (the
 * scrape itself still succeeds; stashd_ready says why).
 */
export function queueGaugeRegistry(parts: Partitions): Registry {
  const registry = new Registry();
  let collectOnce = (): Promise<void> => Promise.resolve();
  const messages = new Gauge({
    name: "stashd_queue_messages",
    help: "Messages by state: ready (due now), delayed (due later), in_flight (leased).",
    labelNames: ["state"],
    registers: [registry],
    collect: () => collectOnce(),
  });
  const dlq = new Gauge({
    name: "stashd_queue_dlq_messages",
    help: "Messages in the dead-letter queue.",
    registers: [registry],
    collect: () => collectOnce(),
  });
  const fifo = new Gauge({
    name: "stashd_queue_fifo_messages",
    help: "Messages of each FIFO queue: waiting (for a slot) and in_flight (holding one).",
    labelNames: ["queue", "state"],
    registers: [registry],
    collect: () => collectOnce(),
  });
  const flowWaiting = new Gauge({
    name: "stashd_queue_flow_control_waiting",
    help: "Messages waiting for a flow-control key's parallelism or rate, all keys together.",
    registers: [registry],
    collect: () => collectOnce(),
  });
  // The four gauges are filled by one collection per scrape; the first gauge asked runs it.
  let collecting: Promise<void> | undefined;
  collectOnce = (): Promise<void> => {
    collecting ??= collect(parts, { messages, dlq, fifo, flowWaiting })
      .catch(() => {
        for (const gauge of [messages, dlq, fifo, flowWaiting]) gauge.reset();
      })
      .finally(() => {
        collecting = undefined;
      });
    return collecting;
  };
  return registry;
}

interface Gauges {
  messages: Gauge;
  dlq: Gauge;
  fifo: Gauge;
  flowWaiting: Gauge;
}

/** Fills the gauges: the depth summed over the partitions, queues and keys from each. */
async function collect(parts: Partitions, g: Gauges): Promise<void> {
  for (const gauge of [g.messages, g.dlq, g.fifo, g.flowWaiting]) gauge.reset();
  const [depth, waits] = await Promise.all([readQueueDepth(parts), parts.each(waitsOf)]);
  g.messages.set({ state: "ready" }, depth.ready);
  g.messages.set({ state: "delayed" }, depth.delayed);
  g.messages.set({ state: "in_flight" }, depth.inFlight);
  g.dlq.set(depth.dlq + depth.workflowDlq); // the whole DLQ, as its help says
  for (const { fifo } of waits) {
    for (const [queue, waiting, inFlight] of fifo) {
      g.fifo.set({ queue, state: "waiting" }, waiting);
      g.fifo.set({ queue, state: "in_flight" }, inFlight);
    }
  }
  g.flowWaiting.set(waits.reduce((sum, w) => sum + w.flowWaiting, 0));
}

/** Partition `p`'s FIFO queues (name, waiting, in flight) and its flow-control waiting total. */
async function waitsOf(p: Partition) {
  const K = p.keys;
  const [queues, fcKeys] = await p.redis.execMany([
    ["SMEMBERS", K.queues],
    ["SMEMBERS", K.flowControlKeys],
  ]);
  const names = texts(queues);
  const keys = texts(fcKeys);
  const counts = await p.redis.execMany([
    ...names.flatMap((n) => [
      ["LLEN", K.queueWait(n)],
      ["HLEN", K.queueSlots(n)],
    ]),
    ...keys.map((k) => ["LLEN", K.flowControlWait(k)]),
  ]);
  const fifo = names.map((queue, i): [string, number, number] => [
    queue,
    replyInt(counts[2 * i]),
    replyInt(counts[2 * i + 1]),
  ]);
  const flowWaiting = counts.slice(2 * names.length).reduce((sum, r) => sum + replyInt(r), 0);
  return { fifo, flowWaiting };
}

function texts(reply: Reply | undefined): string[] {
  if (reply?.kind !== "array") return [];
  return reply.value.flatMap((r) => (r.kind === "bulk" ? [r.value.toString()] : []));
}
