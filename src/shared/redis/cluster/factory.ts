import { textOf } from "./commands.js";
import { AppError } from "../../errors.js";
import {
  onEachMaster,
  takesEncoded,
  type ExclusiveConnection,
  type ReceivingConnection,
  type RedisBackend,
} from "../backend.js";
import {
  RedisConnection,
  type Exchange,
  type ExchangeOptions,
  type RedisEndpoint,
} from "../connection.js";
import { RedisPool, type PoolOptions } from "../pool.js";
import type { Arg, EncodedCommands, Reply } from "../resp.js";
import { ClusterBackend } from "./backend.js";
import { ClusterTopology } from "./topology.js";

export interface BackendFactoryOptions {
  connectTimeoutMs: number;
  /** See ClusterBackendOptions.failoverWindowMs. */
  failoverWindowMs: number;
  /** More cluster nodes to try when the URL's own node is down (`?seeds=host:port,…`). */
  seeds?: { host: string; port: number }[];
}

/**
 * Opens the backends of one database. Whether the URL names a Redis Cluster node is found out
 * once, on first use (`INFO cluster` → `cluster_enabled:1`; no flag needed): then every backend
 * is a ClusterBackend sharing one slot map, otherwise a RedisPool. A unix socket (the managed
 * redis-server) is never a cluster. See docs/scaling.md, Redis Cluster.
 */
export class BackendFactory {
  private detected: Promise<ClusterTopology | undefined> | undefined;
  private readonly seeds: { host: string; port: number }[];

  constructor(
    private readonly endpoint: RedisEndpoint,
    private readonly options: BackendFactoryOptions,
  ) {
    const own =
      endpoint.host !== undefined && endpoint.port !== undefined
        ? [{ host: endpoint.host, port: endpoint.port }]
        : [];
    this.seeds = [...own, ...(options.seeds ?? [])];
  }

  /** A backend logging in with `endpoint`'s credentials (host and port are the factory's). */
  open(endpoint: RedisEndpoint, pool: PoolOptions): RedisBackend {
    if (endpoint.path !== undefined) return new RedisPool(endpoint, pool);
    return new DetectingBackend(
      () => this.detect(),
      (topology) =>
        topology
          ? new ClusterBackend(topology, endpoint, {
              ...pool,
              failoverWindowMs: this.options.failoverWindowMs,
            })
          : new RedisPool(endpoint, pool),
    );
  }

  /** Admin endpoints of every master of a cluster, or the one endpoint of a single Redis. */
  async masterEndpoints(): Promise<RedisEndpoint[]> {
    if (this.endpoint.path !== undefined) return [this.endpoint];
    const topology = await this.detect();
    if (!topology) return [this.endpoint];
    const map = await topology.map();
    return map.masters.map((node) => topology.nodeEndpoint(node.addr, this.endpoint));
  }

  /** The cluster's topology, or undefined for a single Redis; retried after a failure. */
  detect(): Promise<ClusterTopology | undefined> {
    this.detected ??= this.probe();
    this.detected.catch(() => (this.detected = undefined));
    return this.detected;
  }

  private async probe(): Promise<ClusterTopology | undefined> {
    let lastError: unknown;
    for (const seed of this.seeds) {
      try {
        // A cluster has database 0 only (SELECT is refused), so the probe does not select one.
        const endpoint: RedisEndpoint = { ...this.endpoint, ...seed };
        delete endpoint.db;
        const conn = await RedisConnection.open(endpoint, this.options.connectTimeoutMs);
        const info = await conn.send(["INFO", "cluster"]).finally(() => conn.destroy());
        if (!/cluster_enabled:1/.test(textOf(info) ?? "")) return undefined;
        return new ClusterTopology(this.endpoint, this.seeds, this.options.connectTimeoutMs);
      } catch (err) {
        lastError = err;
      }
    }
    throw lastError instanceof AppError
      ? lastError
      : new AppError("backend_unavailable", "ERR Redis is unreachable", { cause: lastError });
  }
}

/** `redis://h:p/?seeds=h2:p2,h3:p3` → the extra seed nodes of a cluster URL. */
export function seedsOf(url: string | undefined): { host: string; port: number }[] {
  if (!url) return [];
  let list: string | null;
  try {
    list = new URL(url).searchParams.get("seeds");
  } catch {
    return [];
  }
  return (list ?? "")
    .split(",")
    .filter((s) => s.includes(":"))
    .map((s) => {
      const at = s.lastIndexOf(":");
      return { host: s.slice(0, at).replace(/^\[|\]$/g, ""), port: Number(s.slice(at + 1)) };
    });
}

/** Forwards to the backend chosen by detection, which runs on the first call. */
class DetectingBackend implements RedisBackend {
  private inner: RedisBackend | undefined;
  private closed = false;

  constructor(
    private readonly detect: () => Promise<ClusterTopology | undefined>,
    private readonly build: (topology: ClusterTopology | undefined) => RedisBackend,
  ) {}

  async exec(args: readonly Arg[]): Promise<Reply> {
    return (this.inner ?? (await this.resolve())).exec(args);
  }

  async execMany(commands: readonly (readonly Arg[])[]): Promise<Reply[]> {
    return (this.inner ?? (await this.resolve())).execMany(commands);
  }

  async exchange(commands: readonly (readonly Arg[])[], opts: ExchangeOptions): Promise<Exchange> {
    return (this.inner ?? (await this.resolve())).exchange(commands, opts);
  }

  async execOnEachMaster(args: readonly Arg[]): Promise<Reply[]> {
    return onEachMaster(this.inner ?? (await this.resolve()), args);
  }

  async acquire(): Promise<ExclusiveConnection> {
    return (this.inner ?? (await this.resolve())).acquire();
  }

  /** The detected backend's; undefined until detection ran (callers then take `exchange`). */
  connectionNow(): ReceivingConnection | undefined {
    return this.inner?.connectionNow?.();
  }

  /** The detected backend's answer; false until detection ran (callers then take a connection). */
  get sharedTransactions(): boolean {
    return this.inner?.sharedTransactions ?? false;
  }

  /** The detected backend's answer; false until detection ran (callers then encode as usual). */
  get encodedExchanges(): boolean {
    return this.inner?.encodedExchanges ?? false;
  }

  exchangeEncoded(encoded: EncodedCommands, opts: ExchangeOptions): Promise<Exchange> {
    if (!takesEncoded(this.inner))
      return Promise.reject(new Error("exchangeEncoded: this backend takes no encoded commands"));
    return this.inner.exchangeEncoded(encoded, opts);
  }

  release(conn: ExclusiveConnection): void {
    if (this.inner) this.inner.release(conn);
    else conn.destroy();
  }

  discard(conn: ExclusiveConnection): void {
    if (this.inner) this.inner.discard(conn);
    else conn.destroy();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.inner?.close();
  }

  private async resolve(): Promise<RedisBackend> {
    const topology = await this.detect();
    if (this.closed) throw new AppError("backend_unavailable", "ERR stashd is shutting down");
    this.inner ??= this.build(topology);
    return this.inner;
  }
}
