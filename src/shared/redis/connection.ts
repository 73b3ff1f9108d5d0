import net from "node:net";
import tls from "node:tls";
import { AppError, messageOf } from "../errors.js";
import { RawReplies, valueReply } from "./raw-replies.js";
import { parseTurns, type ParseWaiter } from "./parse-turns.js";
import {
  encodeCommandPieces,
  encodeMixed,
  type EncodedCommands,
  RAW_NIL,
  RespParser,
  type Arg,
  type Reply,
  type ValueKind,
} from "./resp.js";

/**
 * Where a Redis server is and how to log in. Built from a URL by `parseRedisUrl`:
 * `redis://[user:password@]host:port[/db]`, `rediss://…` (TLS) or `unix:///path?password=…&db=…`.
 */
export interface RedisEndpoint {
  host?: string;
  port?: number;
  path?: string;
  tls?: boolean;
  username?: string;
  password?: string;
  db?: number;
}

export function parseRedisUrl(url: string): RedisEndpoint {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new AppError("invalid_config", `not a Redis URL: ${JSON.stringify(url)}`);
  }
  const params = u.searchParams;
  const auth = {
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
  };
  if (u.protocol === "unix:") {
    const password = params.get("password");
    const db = params.get("db");
    return {
      path: decodeURIComponent(u.pathname),
      ...auth,
      ...(password ? { password } : {}),
      ...(db ? { db: Number(db) } : {}),
    };
  }
  if (u.protocol !== "redis:" && u.protocol !== "rediss:") {
    throw new AppError("invalid_config", `unsupported Redis URL scheme ${u.protocol}`);
  }
  const db = u.pathname.replace(/^\//, "");
  return {
    host: u.hostname.replace(/^\[|\]$/g, "") || "127.0.0.1",
    port: u.port ? Number(u.port) : 6379,
    tls: u.protocol === "rediss:",
    ...auth,
    ...(db ? { db: Number(db) } : {}),
  };
}

/** Limits of one connection's exchanges with Redis; all optional (off). */
export interface ConnectionOptions {
  /**
   * While replies are owed, a connection that receives nothing for this long is destroyed and its
   * callers get a `backend_unavailable` error: a connection stuck in an unknown state (a server
   * stopped mid-reply, a mode we did not expect) is never reused.
   */
  replyTimeoutMs?: number;
  /**
   * `onStall` is called when a reply marked `watched` has been the next one owed for `afterMs()`
   * (read at each check, so the caller may change it while connections stay open), again each
   * `afterMs()` while it stays owed, and whenever Redis answers a command `BUSY` (a script past
   * its time limit runs). Repeated so that a kill that failed (sent before Redis started the
   * script, or lost while Redis was stalled) is tried again while the script still runs.
   */
  stall?: { afterMs: () => number; onStall: (cause: "stall" | "busy") => void };
}

export interface ExchangeOptions {
  /** Budget for all replies of the call (see RespParser); replies past it become errors. */
  maxReplyBytes?: number;
  /**
   * Indexes of the commands whose wait counts for `ConnectionOptions.stall`. A connection counts
   * as stalled on them while any is unanswered, even behind other replies: Redis holds back every
   * reply on a connection while a script sent on it runs.
   */
  watched?: ReadonlySet<number>;
  /**
   * The caller can take the replies as RawReplies (`Exchange.raw`): a connection then keeps them
   * there rather than as Reply objects. A backend that does not (a cluster) ignores it.
   */
  raw?: boolean;
  /**
   * The reply deadline (ConnectionOptions.replyTimeoutMs) while this call's replies are the next
   * owed, instead of the connection's: for commands that wait on purpose (a blocking command on
   * an exclusive connection, see kv/commands/blocking.ts).
   */
  replyTimeoutMs?: number;
}

export interface Exchange {
  /** With `raw`, built from it on first use (RawReplies.toReplies). */
  readonly replies: Reply[];
  /** What the replies cost against the budget. */
  bytes: number;
  /** The replies, when `ExchangeOptions.raw` asked for them so and the backend keeps them so. */
  raw?: RawReplies;
}

/**
 * Where a call's outcome goes (RedisConnection.exchangeTo): the replies, or the connection's
 * failure. Called from the connection's socket events, once per call; must not throw (an
 * exception there would be taken for the connection's own failure).
 */
export interface ExchangeReceiver {
  replied(result: Exchange): void;
  failed(err: Error): void;
}

/** One call's replies still being collected, in order. */
interface Batch {
  /** Where the replies go: RawReplies when the call asked for them (`ExchangeOptions.raw`). */
  readonly replies: Reply[] | RawReplies;
  received: number;
  readonly expected: number;
  bytes: number;
  readonly budget: number;
  /** Index of the last watched command, -1 for none. */
  readonly lastWatched: number;
  /** ExchangeOptions.replyTimeoutMs, when the call set one. */
  readonly replyTimeoutMs: number | undefined;
  readonly to: ExchangeReceiver;
}

/**
 * One RESP2 connection with request pipelining: every call writes at once and replies come back
 * in order. Redis error replies resolve (as `{kind:"error"}`); only a broken (or timed-out)
 * connection rejects, with a `backend_unavailable` AppError. After `setPushHandler`, unsolicited
 * replies (pub/sub messages, MONITOR lines) go to the handler instead.
 *
 * Calls wait in a FIFO read from a moving head index: `Array#shift` on a long queue is a copy
 * per reply (V8 cannot trim arrays in its large-object space), which made a 100 000-command
 * pipeline quadratic.
 */
export class RedisConnection implements ParseWaiter {
  private queue: (Batch | undefined)[] = [];
  private head = 0;
  private pushHandler: ((reply: Reply) => void) | undefined;
  private closedError: Error | undefined;
  private readonly closeListeners: ((err: Error) => void)[] = [];
  /** Commands written since the last flush, encoded together when it runs. */
  private outbox: (readonly Arg[] | EncodedCommands)[] = [];
  /** The outbox holds EncodedCommands (the flush then takes `encodeMixed`). */
  private hasEncoded = false;
  private flushScheduled = false;
  /** When the next owed reply became the next one (a reply arrived, or a write to an idle link). */
  private waitingSince = 0;
  /** When the chunk being parsed arrived (one clock read per chunk, not per reply). */
  private readAt = 0;
  private readonly parser: RespParser;
  /** Chunks that arrived while parsing had to wait for a later turn (parse-turns.ts). */
  private kept: Buffer[] | undefined;
  /** Stall reports made for the reply owed now: the next is due at (reports + 1) x afterMs. */
  private stallReports = 0;
  private timer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly socket: net.Socket,
    private readonly options: ConnectionOptions,
  ) {
    this.parser = new RespParser(
      (reply, cost) => this.onReply(reply, cost),
      () => this.budgetLeft(),
      (kind, buf, start, end, cost) => this.onValue(kind, buf, start, end, cost),
    );
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("error", (err) => this.fail(err));
    socket.on("close", () => this.fail(new Error("connection closed")));
  }

  /**
   * One chunk from the socket: parsed now, or kept for a later turn when this turn has parsed
   * enough already (parse-turns.ts), the socket paused meanwhile.
   */
  private onData(chunk: Buffer): void {
    if (this.kept !== undefined || parseTurns.mustWait()) {
      if (this.kept === undefined) {
        this.kept = [];
        this.socket.pause();
        parseTurns.wait(this);
      }
      this.kept.push(chunk);
      return;
    }
    this.parseChunk(chunk);
  }

  /** ParseWaiter: the kept chunks, in order, while the turn has time; then reading resumes. */
  parseKept(): boolean {
    const kept = this.kept ?? [];
    while (kept.length > 0 && this.closedError === undefined) {
      if (!parseTurns.hasTime()) return false;
      this.parseChunk(kept.shift() as Buffer);
    }
    this.kept = undefined;
    if (!this.socket.destroyed) this.socket.resume();
    return true;
  }

  private parseChunk(chunk: Buffer): void {
    const from = performance.now();
    this.readAt = Date.now();
    try {
      this.parser.feed(chunk);
    } catch (err) {
      this.fail(new Error(messageOf(err)));
    }
    parseTurns.spend(performance.now() - from);
  }

  /** Connects, logs in (AUTH) and selects the database; rejects with backend_unavailable. */
  static async open(
    endpoint: RedisEndpoint,
    timeoutMs: number,
    options: ConnectionOptions = {},
  ): Promise<RedisConnection> {
    const socket = await connectSocket(endpoint, timeoutMs);
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 30_000);
    const conn = new RedisConnection(socket, options);
    const handshake: Arg[][] = [];
    if (endpoint.password !== undefined) {
      handshake.push(
        endpoint.username
          ? ["AUTH", endpoint.username, endpoint.password]
          : ["AUTH", endpoint.password],
      );
    }
    if (endpoint.db) handshake.push(["SELECT", String(endpoint.db)]);
    // A server that accepted the socket but never answers (mid-restart) must not hang callers.
    const timer = setTimeout(() => conn.destroy(), timeoutMs);
    const replies = await conn.sendMany(handshake).finally(() => clearTimeout(timer));
    const failed = replies.find((r) => r.kind === "error");
    if (failed && failed.kind === "error") {
      conn.destroy();
      throw new LoginRefusedError(failed.value);
    }
    return conn;
  }

  get alive(): boolean {
    return this.closedError === undefined;
  }

  /** Whether written commands wait for this turn's flush (see `write`). */
  get writePending(): boolean {
    return this.flushScheduled;
  }

  /** Calls still waiting for replies. */
  get inFlight(): number {
    return this.queue.length - this.head;
  }

  async send(args: readonly Arg[]): Promise<Reply> {
    const { replies } = await this.exchange([args]);
    return replies[0] as Reply;
  }

  async sendMany(commands: readonly (readonly Arg[])[]): Promise<Reply[]> {
    return (await this.exchange(commands)).replies;
  }

  /** Sends commands in one write and collects their replies, within `opts`' limits. */
  exchange(commands: readonly (readonly Arg[])[], opts: ExchangeOptions = {}): Promise<Exchange> {
    return this.owe(commands.length, opts, () => this.write(commands));
  }

  /** `exchange` of commands already encoded (see EncodedCommands), their bytes sent as they are. */
  exchangeEncoded(encoded: EncodedCommands, opts: ExchangeOptions = {}): Promise<Exchange> {
    return this.owe(encoded.count, opts, () => this.writeEncoded(encoded));
  }

  /** Queues encoded commands for this turn's flush (see `write`). */
  private writeEncoded(encoded: EncodedCommands): void {
    this.outbox.push(encoded);
    this.hasEncoded = true;
    this.scheduleFlush();
  }

  /**
   * `exchange` without a promise: the outcome goes to `to`, from this connection's socket events
   * (never before this returns, unless the connection is closed already). For the KV gateway's
   * single commands, where a promise per call and the turns of the event loop it takes to settle
   * were a measurable share of a request's CPU (docs/decisions.md, "KV fast lane").
   */
  exchangeTo(
    commands: readonly (readonly Arg[])[],
    opts: ExchangeOptions,
    to: ExchangeReceiver,
  ): void {
    if (this.closedError) to.failed(unavailable(this.closedError));
    else if (commands.length === 0) to.replied({ replies: [], bytes: 0 });
    else this.enqueue(commands.length, opts, to, () => this.write(commands));
  }

  /** `exchangeTo` of commands already encoded (see `exchangeEncoded`). */
  exchangeEncodedTo(encoded: EncodedCommands, opts: ExchangeOptions, to: ExchangeReceiver): void {
    if (this.closedError) to.failed(unavailable(this.closedError));
    else this.enqueue(encoded.count, opts, to, () => this.writeEncoded(encoded));
  }

  /** Queues a call owed `expected` replies, then runs `send`, which writes its commands. */
  private owe(expected: number, opts: ExchangeOptions, send: () => void): Promise<Exchange> {
    if (expected === 0) return Promise.resolve({ replies: [], bytes: 0 });
    if (this.closedError) return Promise.reject(unavailable(this.closedError));
    return new Promise((resolve, reject) => {
      this.enqueue(expected, opts, { replied: resolve, failed: reject }, send);
    });
  }

  private enqueue(
    expected: number,
    opts: ExchangeOptions,
    to: ExchangeReceiver,
    send: () => void,
  ): void {
    if (this.inFlight === 0) this.nextReplyOwed();
    this.queue.push({
      replies: opts.raw === true ? new RawReplies() : [],
      received: 0,
      expected,
      bytes: 0,
      budget: opts.maxReplyBytes ?? Infinity,
      lastWatched: lastOf(opts.watched),
      replyTimeoutMs: opts.replyTimeoutMs,
      to,
    });
    send();
    this.armTimer();
  }

  /** Writes a command whose replies will arrive through the push handler. */
  sendNoReply(args: readonly Arg[]): void {
    if (!this.closedError) this.write([args]);
  }

  setPushHandler(handler: (reply: Reply) => void): void {
    this.pushHandler = handler;
  }

  onClose(listener: (err: Error) => void): void {
    if (this.closedError) listener(this.closedError);
    else this.closeListeners.push(listener);
  }

  destroy(): void {
    this.socket.destroy();
    this.fail(new Error("connection closed by stashd"));
  }

  /**
   * Queues commands and flushes them, encoded into one buffer, in one socket write after this
   * round of I/O callbacks (setImmediate), so commands from many concurrent HTTP requests share
   * one allocation and one syscall.
   */
  private write(commands: readonly (readonly Arg[])[]): void {
    for (const command of commands) this.outbox.push(command);
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    const out = this.outbox;
    const mixed = this.hasEncoded;
    this.outbox = [];
    this.hasEncoded = false;
    if (this.closedError || out.length === 0) return;
    try {
      if (mixed) this.socket.write(encodeMixed(out));
      else this.writePieces(encodeCommandPieces(out as (readonly Arg[])[]));
    } catch (err) {
      // Only a caller bypassing the types (an argument neither string nor Buffer) gets here.
      this.fail(new Error(`cannot encode a command: ${messageOf(err)}`));
    }
  };

  /** Pieces of one encoding (large arguments by reference, not copied) in one corked write. */
  private writePieces(pieces: Buffer[]): void {
    if (pieces.length === 1) {
      this.socket.write(pieces[0] as Buffer);
      return;
    }
    this.socket.cork();
    for (const piece of pieces) this.socket.write(piece);
    this.socket.uncork();
  }

  private budgetLeft(): number {
    const batch = this.queue[this.head];
    return batch ? batch.budget - batch.bytes : Infinity;
  }

  private onReply(reply: Reply, cost: number): void {
    if (reply.kind === "error" && reply.value.startsWith("BUSY "))
      this.options.stall?.onStall("busy");
    const batch = this.queue[this.head];
    if (!batch) {
      this.pushHandler?.(reply);
      return;
    }
    if (Array.isArray(batch.replies)) batch.replies.push(reply);
    else batch.replies.addObject(reply);
    this.received(batch, cost);
  }

  /** A top-level value from the parser (RespParser's `onValue`): kept raw when asked for. */
  private onValue(kind: ValueKind, buf: Buffer, start: number, end: number, cost: number): void {
    const batch = this.queue[this.head];
    if (batch === undefined || Array.isArray(batch.replies)) {
      this.onReply(valueReply(kind, buf, start, end), cost);
      return;
    }
    if (kind === RAW_NIL) batch.replies.addNil();
    else batch.replies.addValue(kind, buf, start, end);
    this.received(batch, cost);
  }

  /** Counts a reply the head batch got; resolves the batch once it has all of them. */
  private received(batch: Batch, cost: number): void {
    this.nextReplyOwed(this.readAt);
    batch.bytes += cost;
    if (++batch.received < batch.expected) return this.armTimer();
    this.queue[this.head++] = undefined;
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    batch.to.replied(exchangeOf(batch.replies, batch.bytes));
    if (this.inFlight > 0) this.armTimer();
  }

  private nextReplyOwed(now = Date.now()): void {
    this.waitingSince = now;
    this.stallReports = 0;
  }

  /** One timer per connection, re-armed lazily: checks the reply deadline and the stall hook. */
  private armTimer(): void {
    if (this.timer !== undefined || this.closedError) return;
    const stallAfterMs = this.options.stall?.afterMs() ?? 0;
    const delays = [
      this.replyDeadline(),
      stallAfterMs > 0 ? stallAfterMs * (this.stallReports + 1) : undefined,
    ];
    const next = Math.min(...delays.map((d) => (d === undefined ? Infinity : d)));
    if (next === Infinity) return;
    const wait = Math.max(1, this.waitingSince + next - Date.now());
    this.timer = setTimeout(this.check, wait);
    this.timer.unref();
  }

  private readonly check = (): void => {
    this.timer = undefined;
    const batch = this.queue[this.head];
    if (!batch || this.closedError) return;
    const waited = Date.now() - this.waitingSince;
    const { stall } = this.options;
    const replyTimeoutMs = this.replyDeadline();
    if (replyTimeoutMs !== undefined && waited >= replyTimeoutMs) {
      this.fail(new Error(`no reply within ${replyTimeoutMs} ms`));
      return;
    }
    const afterMs = stall?.afterMs() ?? 0;
    if (stall && afterMs > 0 && waited >= afterMs * (this.stallReports + 1)) {
      this.stallReports = Math.floor(waited / afterMs);
      if (this.awaitsWatched()) stall.onStall("stall");
    }
    this.armTimer();
  };

  /** The reply deadline now: the next owed call's own (ExchangeOptions.replyTimeoutMs) or ours. */
  private replyDeadline(): number | undefined {
    return this.queue[this.head]?.replyTimeoutMs ?? this.options.replyTimeoutMs;
  }

  /** Whether a watched command is still unanswered (in any waiting call: see `watched`). */
  private awaitsWatched(): boolean {
    const head = this.queue[this.head];
    if (head && head.lastWatched >= head.received) return true;
    for (let i = this.head + 1; i < this.queue.length; i++) {
      if ((this.queue[i]?.lastWatched ?? -1) >= 0) return true;
    }
    return false;
  }

  private fail(err: Error): void {
    if (this.closedError) return;
    this.closedError = err;
    clearTimeout(this.timer);
    this.socket.destroy();
    const error = unavailable(err);
    const waiting = this.queue.slice(this.head);
    this.queue = [];
    this.head = 0;
    for (const batch of waiting) batch?.to.failed(error);
    for (const listener of this.closeListeners) listener(err);
  }
}

/** A finished call's result; RawReplies also as Reply objects, built when first asked for. */
function exchangeOf(replies: Reply[] | RawReplies, bytes: number): Exchange {
  return Array.isArray(replies) ? { replies, bytes } : new RawExchange(replies, bytes);
}

/** An Exchange of RawReplies (see ExchangeOptions.raw). */
class RawExchange implements Exchange {
  constructor(
    readonly raw: RawReplies,
    readonly bytes: number,
  ) {}

  get replies(): Reply[] {
    return this.raw.toReplies();
  }
}

/** The largest index in `watched`, -1 for none. */
function lastOf(watched: ReadonlySet<number> | undefined): number {
  let last = -1;
  if (watched) for (const i of watched) if (i > last) last = i;
  return last;
}

/** Redis answered AUTH or SELECT with an error: wrong credentials, missing ACL user, bad db. */
export class LoginRefusedError extends AppError {
  constructor(readonly redisError: string) {
    super("backend_unavailable", `ERR Redis refused the login: ${redisError}`);
  }
}

function unavailable(cause: Error): AppError {
  return new AppError("backend_unavailable", `ERR Redis is unreachable: ${cause.message}`, {
    cause,
  });
}

function connectSocket(ep: RedisEndpoint, timeoutMs: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const opts = ep.path ? { path: ep.path } : { host: ep.host ?? "127.0.0.1", port: ep.port ?? 0 };
    const socket = ep.tls
      ? tls.connect({ ...opts, ...(ep.host && !net.isIP(ep.host) ? { servername: ep.host } : {}) })
      : net.connect(opts);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(unavailable(new Error(`connect timed out after ${timeoutMs} ms`)));
    }, timeoutMs);
    socket.once(ep.tls ? "secureConnect" : "connect", () => {
      clearTimeout(timer);
      socket.removeAllListeners("error");
      resolve(socket);
    });
    socket.once("error", (err) => {
      clearTimeout(timer);
      reject(unavailable(err));
    });
  });
}
