import type { Config } from "../../config/schema.js";
import { AppError } from "../../shared/errors.js";
import type { ExclusiveConnection, RedisBackend } from "../../shared/redis/backend.js";
import { SlotGate, type LeaveSlot } from "../../shared/slot-gate.js";

/**
 * An exclusive connection and the slot it holds; give both back with `release` or `discard`
 * (the first call counts, later ones do nothing).
 */
export interface ExclusiveLease {
  readonly conn: ExclusiveConnection;
  /** Returns the connection to its pool, clean (no MULTI open, no subscription). */
  release(): void;
  /** Closes a connection whose state cannot be reused. */
  discard(): void;
}

/**
 * The per-database bounds on backend connections that requests hold for themselves, all tokens of
 * the database together (the standard, read-only and ACL pools share them), so a flood of
 * requests cannot open a connection each:
 * - exclusive connections (long transactions, any transaction on a Redis Cluster) are at most
 *   STASHD_KV_EXCLUSIVE_CONNECTIONS; further requests wait in line (STASHD_KV_EXCLUSIVE_QUEUE
 *   of them, for up to STASHD_KV_EXCLUSIVE_WAIT_MS), the rest are answered 429 / 503;
 * - event streams, which hold their connection as long as the client listens, are at most
 *   STASHD_KV_MAX_STREAMS and never wait: one more is answered 429 at once;
 * - requests running blocking commands (blocking.ts), each on an exclusive connection of its own
 *   for up to STASHD_KV_MAX_BLOCK_MS, are at most STASHD_KV_MAX_BLOCKED and never wait either.
 *   Their bound is apart from the transactions', so blocked requests cannot starve those.
 */
export class ExclusiveLimits {
  private readonly exclusive: SlotGate;
  private readonly streams: SlotGate;
  private readonly blocked: SlotGate;

  constructor(
    private readonly dbName: string,
    config: Config,
  ) {
    this.exclusive = new SlotGate({
      slots: Math.max(1, config.kvExclusiveConnections),
      queue: config.kvExclusiveQueue,
      waitMs: config.kvExclusiveWaitMs,
      what: `an exclusive Redis connection of database ${dbName}`,
      errorPrefix: "ERR ",
    });
    this.streams = new SlotGate({
      slots: config.kvMaxStreams,
      queue: 0,
      waitMs: 0,
      what: `an event stream of database ${dbName}`,
    });
    this.blocked = new SlotGate({
      slots: config.kvMaxBlocked,
      queue: 0,
      waitMs: 0,
      what: `a blocked request of database ${dbName}`,
    });
  }

  /** An exclusive connection of `pool`, once a slot is free (see the class comment). */
  async lease(pool: RedisBackend): Promise<ExclusiveLease> {
    return leaseWithin(await this.exclusive.enter(), pool);
  }

  /**
   * An exclusive connection of `pool` for a request's blocking commands; throws a 429 when the
   * database has its maximum of blocked requests (see the class comment).
   */
  async leaseBlocked(pool: RedisBackend): Promise<ExclusiveLease> {
    const leave = this.blocked.tryEnter();
    if (leave) return leaseWithin(leave, pool);
    throw new AppError(
      "too_many_requests",
      `ERR too many blocked requests on database ${this.dbName} (at most ${this.blocked.held}, STASHD_KV_MAX_BLOCKED); retry later`,
      { headers: { "retry-after": "1" } },
    );
  }

  /**
   * Runs `open` (which opens a short-lived connection of its own, e.g. a login check) within an
   * exclusive-connection slot, so such connections count against the same bound.
   */
  async withSlot<T>(open: () => Promise<T>): Promise<T> {
    const leave = await this.exclusive.enter();
    try {
      return await open();
    } finally {
      leave();
    }
  }

  /** A place for one more event stream; throws a 429 when the database has its maximum open. */
  enterStream(): LeaveSlot {
    const leave = this.streams.tryEnter();
    if (leave) return leave;
    throw new AppError(
      "too_many_requests",
      `ERR too many event streams open on database ${this.dbName} (at most ${this.streams.held}); retry later`,
      { headers: { "retry-after": "5" } },
    );
  }

  /**
   * Exclusive connections in use and requests waiting for one, streams open, blocked requests
   * (for tests and metrics).
   */
  get usage(): { exclusive: number; waiting: number; streams: number; blocked: number } {
    return {
      exclusive: this.exclusive.held,
      waiting: this.exclusive.waiting,
      streams: this.streams.held,
      blocked: this.blocked.held,
    };
  }
}

/** An exclusive connection of `pool` held within the slot that `leave` gives back. */
async function leaseWithin(leave: LeaveSlot, pool: RedisBackend): Promise<ExclusiveLease> {
  let conn: ExclusiveConnection;
  try {
    conn = await pool.acquire();
  } catch (err) {
    leave();
    throw err;
  }
  let done = false;
  // The connection goes back before the slot, so the next in line finds it idle.
  const giveBack = (keep: boolean): void => {
    if (done) return;
    done = true;
    if (keep) pool.release(conn);
    else pool.discard(conn);
    leave();
  };
  return { conn, release: () => giveBack(true), discard: () => giveBack(false) };
}
