import net from "node:net";
import tls from "node:tls";
import { AppError, messageOf } from "../errors.js";
import { encodeCommand, encodeCommands, RespParser, type Arg, type Reply } from "./resp.js";

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

/** `redis://…` URL of an endpoint (for unix sockets, `unix://`), with the password left out. */
export function describeEndpoint(ep: RedisEndpoint): string {
  return ep.path ? `unix://${ep.path}` : `${ep.tls ? "rediss" : "redis"}://${ep.host}:${ep.port}`;
}

type Waiter = { resolve: (r: Reply) => void; reject: (e: Error) => void };

/**
 * One RESP2 connection with request pipelining: every `send` writes at once and replies come back
 * in order. Redis error replies resolve (as `{kind:"error"}`); only a broken connection rejects,
 * with a `backend_unavailable` AppError. After `setPushHandler`, unsolicited replies (pub/sub
 * messages, MONITOR lines) go to the handler instead.
 */
export class RedisConnection {
  private readonly waiters: Waiter[] = [];
  private pushHandler: ((reply: Reply) => void) | undefined;
  private closedError: Error | undefined;
  private readonly closeListeners: ((err: Error) => void)[] = [];
  private outbox: Buffer[] = [];
  private flushScheduled = false;

  private constructor(private readonly socket: net.Socket) {
    const parser = new RespParser((reply) => this.onReply(reply));
    socket.on("data", (chunk: Buffer) => {
      try {
        parser.feed(chunk);
      } catch (err) {
        this.fail(new Error(messageOf(err)));
      }
    });
    socket.on("error", (err) => this.fail(err));
    socket.on("close", () => this.fail(new Error("connection closed")));
  }

  /** Connects, logs in (AUTH) and selects the database; rejects with backend_unavailable. */
  static async open(endpoint: RedisEndpoint, timeoutMs: number): Promise<RedisConnection> {
    const socket = await connectSocket(endpoint, timeoutMs);
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 30_000);
    const conn = new RedisConnection(socket);
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

  /** Replies still owed by the server. */
  get inFlight(): number {
    return this.waiters.length;
  }

  send(args: readonly Arg[]): Promise<Reply> {
    return new Promise((resolve, reject) => {
      if (this.closedError) return reject(unavailable(this.closedError));
      this.waiters.push({ resolve, reject });
      this.write(encodeCommand(args));
    });
  }

  async sendMany(commands: readonly (readonly Arg[])[]): Promise<Reply[]> {
    if (commands.length === 0) return [];
    if (this.closedError) throw unavailable(this.closedError);
    const replies = commands.map(
      () => new Promise<Reply>((resolve, reject) => this.waiters.push({ resolve, reject })),
    );
    this.write(encodeCommands(commands));
    return Promise.all(replies);
  }

  /** Writes a command whose replies will arrive through the push handler. */
  sendNoReply(args: readonly Arg[]): void {
    if (!this.closedError) this.write(encodeCommand(args));
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
   * Queues bytes and flushes them in one socket write after this round of I/O callbacks
   * (setImmediate), so commands from many concurrent HTTP requests share one syscall.
   */
  private write(bytes: Buffer): void {
    this.outbox.push(bytes);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    const out = this.outbox;
    this.outbox = [];
    if (!this.closedError && out.length > 0) {
      this.socket.write(out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out));
    }
  };

  private onReply(reply: Reply): void {
    // Array#shift is O(1) for V8's packed arrays (left-trimming), so this stays cheap.
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve(reply);
    else this.pushHandler?.(reply);
  }

  private fail(err: Error): void {
    if (this.closedError) return;
    this.closedError = err;
    this.socket.destroy();
    const error = unavailable(err);
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
    for (const listener of this.closeListeners) listener(err);
  }
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
