import type { Exchange, ExchangeOptions, ExchangeReceiver } from "./connection.js";
import type { Arg, EncodedCommands, Reply } from "./resp.js";

/**
 * What the KV gateway needs from "a Redis": a single server (RedisPool) or a Redis Cluster
 * (cluster/backend.ts) offer the same surface, so the gateway does not know which it talks to.
 */
export interface RedisBackend {
  exec(args: readonly Arg[]): Promise<Reply>;
  /** Replies in the order of the commands. */
  execMany(commands: readonly (readonly Arg[])[]): Promise<Reply[]>;
  /** `execMany` with a reply budget and stall watch (see RedisConnection.exchange). */
  exchange(commands: readonly (readonly Arg[])[], opts: ExchangeOptions): Promise<Exchange>;
  /**
   * True when `exchangeEncoded` can send commands already encoded (a single Redis: they go to
   * one connection as they are; not a cluster, which must route each command by its keys).
   */
  readonly encodedExchanges?: boolean;
  /** `exchange` of EncodedCommands; only when `encodedExchanges` is true. */
  exchangeEncoded?(encoded: EncodedCommands, opts: ExchangeOptions): Promise<Exchange>;
  /**
   * The shared connection the next `exchange` would go to, when it is open now (a single Redis;
   * not a cluster, which routes each command by its keys): a caller may then send on it with a
   * receiver instead of a promise. Undefined when none is open (the caller takes `exchange`).
   */
  connectionNow?(): ReceivingConnection | undefined;
  /** A connection only the caller uses; give it back with `release` or `discard`. */
  acquire(): Promise<ExclusiveConnection>;
  /**
   * True when `exchange` writes one call's commands contiguously on one connection, so a short
   * MULTI … EXEC may go through it instead of an exclusive connection (a single Redis; not a
   * cluster, whose exchange splits commands by node).
   */
  readonly sharedTransactions?: boolean;
  release(conn: ExclusiveConnection): void;
  discard(conn: ExclusiveConnection): void;
  close(): Promise<void>;
  /**
   * A node-local command (INFO memory) on every master of a cluster, one reply per master; only
   * a cluster has it (see `onEachMaster`).
   */
  execOnEachMaster?(args: readonly Arg[]): Promise<Reply[]>;
}

/** `args` on every master of `backend`: the one Redis of a single server, each of a cluster's. */
export async function onEachMaster(backend: RedisBackend, args: readonly Arg[]): Promise<Reply[]> {
  return backend.execOnEachMaster ? backend.execOnEachMaster(args) : [await backend.exec(args)];
}

/** A backend that takes commands already encoded now (see `encodedExchanges`). */
export type EncodingBackend = RedisBackend & Required<Pick<RedisBackend, "exchangeEncoded">>;

export function takesEncoded(backend: RedisBackend | undefined): backend is EncodingBackend {
  return backend?.encodedExchanges === true && backend.exchangeEncoded !== undefined;
}

/** The part of RedisConnection that callers of `connectionNow` use. */
export interface ReceivingConnection {
  exchangeTo(
    commands: readonly (readonly Arg[])[],
    opts: ExchangeOptions,
    to: ExchangeReceiver,
  ): void;
  /** `exchangeTo` of commands already encoded (a `/pipeline` body, kv/fast/encoded-pipeline.ts). */
  exchangeEncodedTo(encoded: EncodedCommands, opts: ExchangeOptions, to: ExchangeReceiver): void;
}

/** The part of RedisConnection that callers of `acquire` use. */
export interface ExclusiveConnection {
  readonly alive: boolean;
  send(args: readonly Arg[]): Promise<Reply>;
  sendMany(commands: readonly (readonly Arg[])[]): Promise<Reply[]>;
  exchange(commands: readonly (readonly Arg[])[], opts?: ExchangeOptions): Promise<Exchange>;
  setPushHandler(handler: (reply: Reply) => void): void;
  onClose(listener: (err: Error) => void): void;
  destroy(): void;
}
