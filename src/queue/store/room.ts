import { AppError } from "../../shared/errors.js";
import type { Logger } from "../../shared/log.js";
import type { Partitions } from "./partitions.js";

/** What the room check reads of one Redis; `INFO memory` on a partition's connection. */
const USED_MEMORY = /^used_memory:(\d+)\s*$/m;

/**
 * The queue's bound on stored data (STASHD_QUEUE_MAX_DATA_BYTES): every `everyMs` it reads
 * `used_memory` of each partition's Redis; while the fullest is at or past the limit, the
 * queue's API writes (publish, batch, enqueue, schedules, DLQ retries…) answer 507, while
 * deliveries, retries and their bookkeeping go on, and reads and deletes make room.
 *
 * Not Redis's own `maxmemory`: at that limit Redis would refuse the bookkeeping of deliveries
 * already accepted too (a claim, a retry's reschedule), and stall them. A check between
 * requests lets a publisher write up to one interval's worth past the limit, which is why the
 * interval is short; a check that cannot reach Redis keeps the last reading.
 */
export class StoreRoom {
  private used = 0;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly partitions: Partitions,
    private readonly opts: { maxBytes: number; everyMs: number },
    private readonly log: Logger,
  ) {}

  /** Reads once now (so a full store refuses from the first request), then every `everyMs`. */
  async start(): Promise<void> {
    await this.check();
    this.timer = setInterval(() => {
      this.running ??= this.check().finally(() => (this.running = undefined));
    }, this.opts.everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** Whether the store is at its limit, as of the last reading. */
  full(): boolean {
    return this.used >= this.opts.maxBytes;
  }

  /** Throws the 507 of an API write while the store is full. */
  assertRoom(): void {
    if (!this.full()) return;
    throw new AppError(
      "insufficient_storage",
      `the queue's storage is full: its Redis uses ${mib(this.used)} of the ` +
        `${mib(this.opts.maxBytes)} it may (STASHD_QUEUE_MAX_DATA_BYTES). Writes are refused ` +
        "until deliveries, DLQ deletes or log retention make room; messages already accepted " +
        "are still delivered",
    );
  }

  private async check(): Promise<void> {
    let readings: number[];
    try {
      readings = await this.partitions.each(async (p) => {
        const reply = await p.redis.exec(["INFO", "memory"]);
        const m = reply.kind === "bulk" ? USED_MEMORY.exec(reply.value.toString()) : null;
        return m ? Number(m[1]) : 0;
      });
    } catch {
      return;
    }
    const wasFull = this.full();
    this.used = Math.max(0, ...readings);
    if (this.full() === wasFull) return;
    const fields = { usedBytes: this.used, maxBytes: this.opts.maxBytes };
    if (this.full()) this.log.error("queue storage full: refusing writes", fields);
    else this.log.info("queue storage has room again: accepting writes", fields);
  }
}

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
