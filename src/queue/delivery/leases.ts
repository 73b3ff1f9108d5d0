import { messageOf } from "../../shared/errors.js";
import type { Logger } from "../../shared/log.js";
import type { MessageStore } from "../store/message-store.js";
import { AttemptAbort } from "./attempt-abort.js";

/** The abort reason of an attempt abandoned because its lease was lost or ran out. */
export class LeaseLost extends Error {}

/**
 * The abort reason of an attempt whose message was cancelled: unlike a lost lease, the holder
 * still records it (the finish script ends it as CANCELED and frees its queue and flow-control
 * slots).
 */
export class MessageCancelled extends Error {
  constructor() {
    super("message cancelled during delivery");
  }
}

/** One lease this process holds while its attempt runs. */
interface Lease {
  id: string;
  token: string;
  /** When the lease ends in Redis unless renewed (ms). */
  until: number;
  abort: AttemptAbort;
  /** The request is over: a lost lease no longer aborts anything (the finish script sees it). */
  settled: boolean;
}

/**
 * The delivery leases of one process. A lease is what keeps two processes from delivering the
 * same message at once (a FIFO queue's or a flow-control key's parallelism depends on it), so an
 * attempt must never outlive its lease. The keeper renews the leases every `leaseMs / 3` and
 * aborts (through the AttemptAbort `hold` returns, with a `LeaseLost` reason) every attempt whose
 * lease
 * - is reported lost by a renewal (it was reaped, perhaps claimed by another process), or
 * - comes within `leaseMs / 5` of its end without a renewal (Redis unreachable, renewals late
 *   because this process is starved), checked every `leaseMs / 10`.
 * Each renewal also reads which held messages were cancelled meanwhile (by any process sharing
 * the Redis) and aborts their attempts with a `MessageCancelled` reason; `cancel` does the same
 * at once for cancels made through this process.
 * Deadlines and expiry are on Redis's clock; this process tracks them on its own, from when it
 * sent the claim or renewal (never later than Redis's deadline), so the processes' clocks need
 * not agree. The guard does assume no process stalls longer than `leaseMs / 5`: a process frozen
 * past its lease cannot abort in time.
 */
export class LeaseKeeper {
  private readonly held = new Map<string, Lease>();
  private renewer: NodeJS.Timeout | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private readonly guardMs: number;

  constructor(
    private readonly store: Pick<MessageStore, "renew" | "cancelRequested">,
    private readonly leaseMs: number,
    private readonly log: Logger,
  ) {
    this.guardMs = Math.max(20, Math.floor(leaseMs / 5));
  }

  start(): void {
    this.renewer = setInterval(() => void this.renew(), Math.max(10, Math.floor(this.leaseMs / 3)));
    const every = Math.max(10, Math.floor(this.leaseMs / 10));
    this.watchdog = setInterval(() => this.abandonExpiring(Date.now()), every);
  }

  stop(): void {
    clearInterval(this.renewer);
    clearInterval(this.watchdog);
  }

  /** Aborts every attempt whose request is still running (shutdown); settled ones are kept. */
  abandonAll(reason: string): void {
    for (const lease of [...this.held.values()]) {
      if (!lease.settled) this.abandon(lease, reason);
    }
  }

  /** Starts keeping a lease; its abort is fired when the attempt must be abandoned. */
  hold(id: string, token: string, until: number): AttemptAbort {
    const lease: Lease = { id, token, until, abort: new AttemptAbort(), settled: false };
    this.held.set(id, lease);
    if (this.nearEnd(lease, Date.now())) this.abandon(lease, "delivery lease expired");
    return lease.abort;
  }

  /**
   * The attempt's request is over; the lease is still renewed while its outcome is recorded
   * (a slow finish must not let the reaper hand the message to another process).
   */
  settle(id: string, token: string): void {
    const lease = this.held.get(id);
    if (lease?.token === token) lease.settled = true;
  }

  /** Aborts the running attempts of these (cancelled) messages; others are ignored. */
  cancel(ids: readonly string[]): void {
    for (const id of ids) {
      const lease = this.held.get(id);
      if (lease && !lease.settled) lease.abort.abort(new MessageCancelled());
    }
  }

  /** Stops keeping the lease (its outcome is recorded); a newer lease on the same id is kept. */
  release(id: string, token: string): void {
    if (this.held.get(id)?.token === token) this.held.delete(id);
  }

  private async renew(): Promise<void> {
    if (this.held.size === 0) return;
    const batch = [...this.held.values()];
    // Redis extends to its TIME + lease when the script runs, which is no earlier than this.
    const deadline = Date.now() + this.leaseMs;
    try {
      const [lost, cancelled] = await Promise.all([
        this.store.renew(
          this.leaseMs,
          batch.map((l) => [l.id, l.token]),
        ),
        this.store.cancelRequested(batch.map((l) => l.id)),
      ]);
      for (const lease of batch) {
        if (lost.has(lease.id)) this.abandon(lease, "delivery lease lost");
        else lease.until = Math.max(lease.until, deadline);
      }
      this.cancel([...cancelled]);
    } catch (err) {
      this.log.warn("lease renewal failed", { err: messageOf(err) });
    }
  }

  private abandonExpiring(now: number): void {
    for (const lease of this.held.values()) {
      if (this.nearEnd(lease, now)) this.abandon(lease, "delivery lease expired");
    }
  }

  /** Too close to its end to go on: the reaper elsewhere may take it before the next check. */
  private nearEnd(lease: Lease, now: number): boolean {
    return lease.until - now <= this.guardMs;
  }

  /** Aborts a held lease's attempt; a lease released meanwhile (attempt done) is left alone. */
  private abandon(lease: Lease, reason: string): void {
    if (this.held.get(lease.id) !== lease) return;
    this.held.delete(lease.id);
    if (lease.settled) return;
    this.log.warn("delivery abandoned", { id: lease.id, reason });
    lease.abort.abort(new LeaseLost(reason));
  }
}
