import { Gauge, Registry } from "prom-client";
import { readQueueDepth, replyInt } from "../queue/store/depth.js";
import { queueKeys as K } from "../queue/store/keys.js";
import type { QueueRedis } from "../queue/store/redis.js";
import type { Reply } from "../shared/redis/resp.js";

/**
 * Queue depth read from the queue Redis at scrape time (cheap counting commands, one pipelined
 * round trip per step) rather than tracked in memory, so every process reports the shared truth
 * and nothing drifts across restarts. A scrape while Redis is down reports no queue gauges (the
 * scrape itself still succeeds; stashd_ready says why).
 */
export function queueGaugeRegistry(pool: QueueRedis): Registry {
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
    collecting ??= collect(pool, { messages, dlq, fifo, flowWaiting })
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

async function collect(pool: QueueRedis, g: Gauges): Promise<void> {
  for (const gauge of [g.messages, g.dlq, g.fifo, g.flowWaiting]) gauge.reset();
  const [depth, [queues, fcKeys]] = await Promise.all([
    readQueueDepth(pool),
    pool.execMany([
      ["SMEMBERS", K.queues],
      ["SMEMBERS", K.flowControlKeys],
    ]),
  ]);
  g.messages.set({ state: "ready" }, depth.ready);
  g.messages.set({ state: "delayed" }, depth.delayed);
  g.messages.set({ state: "in_flight" }, depth.inFlight);
  g.dlq.set(depth.dlq);
  const names = texts(queues);
  const keys = texts(fcKeys);
  const counts = await pool.execMany([
    ...names.flatMap((n) => [
      ["LLEN", K.queueWait(n)],
      ["HLEN", K.queueSlots(n)],
    ]),
    ...keys.map((k) => ["LLEN", K.flowControlWait(k)]),
  ]);
  names.forEach((queue, i) => {
    g.fifo.set({ queue, state: "waiting" }, replyInt(counts[2 * i]));
    g.fifo.set({ queue, state: "in_flight" }, replyInt(counts[2 * i + 1]));
  });
  g.flowWaiting.set(counts.slice(2 * names.length).reduce((sum, r) => sum + replyInt(r), 0));
}

function texts(reply: Reply | undefined): string[] {
  if (reply?.kind !== "array") return [];
  return reply.value.flatMap((r) => (r.kind === "bulk" ? [r.value.toString()] : []));
}
