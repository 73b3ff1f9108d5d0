import { AppError } from "../errors.js";
import {
  LoginRefusedError,
  RedisConnection,
  type ConnectionOptions,
  type Exchange,
  type ExchangeOptions,
  type RedisEndpoint,
} from "./connection.js";
import type { Arg, Reply } from "./resp.js";

export interface PoolOptions {
  /** Shared, pipelined connections. */
  size: number;
  connectTimeoutMs: number;
  /** After a failed connect, fail fast for this long instead of hammering a dead server. */
  retryBackoffMs: number;
  /** Called once when Redis refuses the login (e.g. an ACL user lost in a restart); then retried. */
  onLoginRefused?: () => Promise<void>;
  /** Reply deadline and stall hook of every connection (see ConnectionOptions). */
  connection?: ConnectionOptions;
}

/**
 * A fixed set of shared connections used round-robin with pipelining (many requests in flight
 * on each), plus exclusive connections for work that changes connection state (transactions,
 * subscriptions, MONITOR). Dead connections are replaced on the next use, so the pool recovers by
 * itself when Redis comes back.
 */
export class RedisPool {
  private readonly slots: (Promise<RedisConnection> | undefined)[];
  private readonly idleExclusive: RedisConnection[] = [];
  private readonly exclusive = new Set<RedisConnection>();
  private next = 0;
  private failedAt = 0;
  private lastFailure: AppError | undefined;
  private closed = false;

  constructor(
    readonly endpoint: RedisEndpoint,
    private readonly options: PoolOptions,
  ) {
    this.slots = new Array<Promise<RedisConnection> | undefined>(Math.max(1, options.size));
  }

  async exec(args: readonly Arg[]): Promise<Reply> {
    return (await this.shared()).send(args);
  }

  async execMany(commands: readonly (readonly Arg[])[]): Promise<Reply[]> {
    return (await this.shared()).sendMany(commands);
  }

  /** `execMany` with a reply budget and stall watch (see RedisConnection.exchange). */
  async exchange(commands: readonly (readonly Arg[])[], opts: ExchangeOptions): Promise<Exchange> {
    return (await this.shared()).exchange(commands, opts);
  }

  /** A connection only the caller uses; give it back with `release` or `discard`. */
  async acquire(): Promise<RedisConnection> {
    let conn = this.idleExclusive.pop();
    while (conn && !conn.alive) conn = this.idleExclusive.pop();
    conn ??= await this.connect();
    this.exclusive.add(conn);
    return conn;
  }

  /** Returns an exclusive connection in a clean state (no MULTI open, no subscriptions). */
  release(conn: RedisConnection): void {
    this.exclusive.delete(conn);
    if (conn.alive && !this.closed && this.idleExclusive.length < this.options.size) {
      this.idleExclusive.push(conn);
    } else {
      conn.destroy();
    }
  }

  /** Closes an exclusive connection whose state cannot be reused (subscribed, monitoring). */
  discard(conn: RedisConnection): void {
    this.exclusive.delete(conn);
    conn.destroy();
  }

  async close(): Promise<void> {
    this.closed = true;
    const open = await Promise.allSettled(this.slots.filter((s) => s !== undefined));
    for (const r of open) if (r.status === "fulfilled") r.value.destroy();
    for (const conn of [...this.idleExclusive, ...this.exclusive]) conn.destroy();
    this.idleExclusive.length = 0;
    this.exclusive.clear();
  }

  private shared(): Promise<RedisConnection> {
    const index = this.next;
    this.next = (index + 1) % this.slots.length;
    const slot = this.slots[index];
    if (!slot) return this.fillSlot(index);
    return slot.then(
      (conn) => (conn.alive ? conn : this.refill(index, slot)),
      () => this.refill(index, slot),
    );
  }

  /** Replaces a dead slot once, even when several requests notice at the same time. */
  private refill(index: number, stale: Promise<RedisConnection>): Promise<RedisConnection> {
    const current = this.slots[index];
    if (current && current !== stale) return current;
    return this.fillSlot(index);
  }

  private fillSlot(index: number): Promise<RedisConnection> {
    const pending = this.connect();
    this.slots[index] = pending;
    pending.catch(() => {
      if (this.slots[index] === pending) this.slots[index] = undefined;
    });
    return pending;
  }

  private async connect(): Promise<RedisConnection> {
    if (this.closed) throw new AppError("backend_unavailable", "ERR stashd is shutting down");
    if (this.lastFailure && Date.now() - this.failedAt < this.options.retryBackoffMs) {
      throw this.lastFailure;
    }
    try {
      const conn = await this.open();
      this.lastFailure = undefined;
      return conn;
    } catch (err) {
      this.failedAt = Date.now();
      this.lastFailure =
        err instanceof AppError
          ? err
          : new AppError("backend_unavailable", "ERR Redis is unreachable", { cause: err });
      throw this.lastFailure;
    }
  }

  private async open(): Promise<RedisConnection> {
    try {
      return await this.openOnce();
    } catch (err) {
      if (!(err instanceof LoginRefusedError) || !this.options.onLoginRefused) throw err;
      await this.options.onLoginRefused();
      return this.openOnce();
    }
  }

  private openOnce(): Promise<RedisConnection> {
    const { connectTimeoutMs, connection } = this.options;
    return RedisConnection.open(this.endpoint, connectTimeoutMs, connection);
  }
}
