import { AppError } from "../errors.js";
import {
  LoginRefusedError,
  RedisConnection,
  type ConnectionOptions,
  type Exchange,
  type ExchangeOptions,
  type RedisEndpoint,
} from "./connection.js";
import type { Arg, EncodedCommands, Reply } from "./resp.js";

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
 * A fixed set of shared connections used with pipelining (many requests in flight on each), plus
 * exclusive connections for work that changes connection state (long transactions,
 * subscriptions, MONITOR). Dead connections are replaced on the next use, so the pool recovers by
 * itself when Redis comes back.
 *
 * The shared connections take turns by event-loop turn, not by call: while one has a write
 * pending (its flush runs at the end of the turn), every call goes to it, so the commands of all
 * requests that arrived together leave in one write and their replies come back in one read. The
 * next turn's calls go to the next connection, so a large reply on one holds up only its turn.
 */
export class RedisPool {
  /** A short MULTI … EXEC may go through `exchange` (see RedisBackend). */
  readonly sharedTransactions = true;
  /** Commands already encoded go through `exchangeEncoded` (see RedisBackend). */
  readonly encodedExchanges = true;
  private readonly slots: (Promise<RedisConnection> | undefined)[];
  /** The connection of each slot once open, to be used without waiting on the promise. */
  private readonly ready: (RedisConnection | undefined)[];
  private current = 0;
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
    this.ready = new Array<RedisConnection | undefined>(this.slots.length);
  }

  async exec(args: readonly Arg[]): Promise<Reply> {
    return (this.readyShared() ?? (await this.shared())).send(args);
  }

  async execMany(commands: readonly (readonly Arg[])[]): Promise<Reply[]> {
    return (this.readyShared() ?? (await this.shared())).sendMany(commands);
  }

  /** `execMany` with a reply budget and stall watch (see RedisConnection.exchange). */
  exchange(commands: readonly (readonly Arg[])[], opts: ExchangeOptions): Promise<Exchange> {
    const conn = this.readyShared();
    if (conn) return conn.exchange(commands, opts);
    return this.shared().then((c) => c.exchange(commands, opts));
  }

  /** `exchange` of commands already encoded (see RedisConnection.exchangeEncoded). */
  exchangeEncoded(encoded: EncodedCommands, opts: ExchangeOptions): Promise<Exchange> {
    const conn = this.readyShared();
    if (conn) return conn.exchangeEncoded(encoded, opts);
    return this.shared().then((c) => c.exchangeEncoded(encoded, opts));
  }

  /** The shared connection `exchange` would use now, when it is open (see RedisBackend). */
  connectionNow(): RedisConnection | undefined {
    return this.readyShared();
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
    this.ready.fill(undefined);
    const open = await Promise.allSettled(this.slots.filter((s) => s !== undefined));
    for (const r of open) if (r.status === "fulfilled") r.value.destroy();
    for (const conn of [...this.idleExclusive, ...this.exclusive]) conn.destroy();
    this.idleExclusive.length = 0;
    this.exclusive.clear();
  }

  /**
   * The shared connection to use now, when it is open and alive: the one with a write pending in
   * this turn, else the next in turn. Undefined when that one must be (re)opened: then `shared()`
   * does it for the same slot.
   */
  private readyShared(): RedisConnection | undefined {
    const pending = this.ready[this.current];
    if (pending?.alive && pending.writePending) return pending;
    this.current = this.next;
    const conn = this.ready[this.current];
    if (!conn?.alive) return undefined;
    this.next = (this.current + 1) % this.slots.length;
    return conn;
  }

  /** The connection of the slot `readyShared` chose, opened or replaced as needed. */
  private shared(): Promise<RedisConnection> {
    const index = this.current;
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
    this.ready[index] = undefined;
    pending.then(
      (conn) => {
        if (this.slots[index] === pending) this.ready[index] = conn;
      },
      () => {
        if (this.slots[index] === pending) this.slots[index] = undefined;
      },
    );
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
