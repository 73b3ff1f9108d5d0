import { AppError } from "../../errors.js";
import { RedisConnection, type RedisEndpoint } from "../connection.js";
import type { Arg, Reply } from "../resp.js";
import { mapOf, parseRoutingTable, textOf, type CommandTable } from "./commands.js";
import { SLOT_COUNT } from "./slot.js";

/** One cluster node, by the address stashd connects to (`host:port`). */
export interface ClusterNode {
  addr: string;
  host: string;
  port: number;
  master: boolean;
}

/**
 * Which master owns each slot, plus the replicas, as the cluster reported it. `masters` is in
 * the order of their lowest slot, which is what SCAN cursors number nodes by.
 */
export interface SlotMap {
  owners: string[];
  masters: ClusterNode[];
  replicas: ClusterNode[];
}

const REFRESH_MIN_INTERVAL_MS = 100;

/**
 * The slot map of one cluster, shared by every backend of a database. Loaded from CLUSTER SHARDS
 * (Redis 7; CLUSTER SLOTS on older servers) through any node that answers: the known nodes first,
 * then the seeds. `refresh()` coalesces concurrent calls and runs at most every 100 ms; a MOVED
 * reply patches one slot at once (`moved`) and triggers a refresh for the rest.
 */
export class ClusterTopology {
  private current: SlotMap | undefined;
  private loading: Promise<SlotMap> | undefined;
  private loadedAt = 0;
  private table: Promise<CommandTable> | undefined;

  constructor(
    /** Admin credentials and TLS settings; host/port of the seeds come from `seeds`. */
    private readonly endpoint: RedisEndpoint,
    private readonly seeds: readonly { host: string; port: number }[],
    private readonly connectTimeoutMs: number,
  ) {}

  /** The current map, loading it the first time. */
  async map(): Promise<SlotMap> {
    return this.current ?? this.refresh(true);
  }

  /** Reloads the map (at most once per 100 ms unless forced); resolves with the newest map. */
  refresh(force = false): Promise<SlotMap> {
    if (this.loading) return this.loading;
    if (this.current && !force && Date.now() - this.loadedAt < REFRESH_MIN_INTERVAL_MS) {
      return Promise.resolve(this.current);
    }
    const loading = this.load().finally(() => {
      if (this.loading === loading) this.loading = undefined;
    });
    this.loading = loading;
    return loading;
  }

  /** The servers' COMMAND table (key specs and tips), loaded once through any node. */
  routing(): Promise<CommandTable> {
    this.table ??= this.withAnyNode(async (conn) =>
      parseRoutingTable(await expectOk(conn, ["COMMAND"])),
    );
    this.table.catch(() => (this.table = undefined));
    return this.table;
  }

  /** A MOVED reply: the slot now lives at `addr`. */
  moved(slot: number, addr: string): void {
    if (this.current) this.current.owners[slot] = addr;
    void this.refresh().catch(() => undefined);
  }

  /** Endpoint of a node with the given credentials (the seed's TLS setting applies to all). */
  nodeEndpoint(addr: string, credentials: RedisEndpoint): RedisEndpoint {
    const { host, port } = splitAddr(addr);
    const endpoint: RedisEndpoint = { ...credentials, host, port };
    delete endpoint.path;
    delete endpoint.db;
    return endpoint;
  }

  private async load(): Promise<SlotMap> {
    const map = await this.withAnyNode(async (conn, endpoint) => {
      const shards = await conn.send(["CLUSTER", "SHARDS"]);
      const loaded =
        shards.kind === "error"
          ? fromSlots(await expectOk(conn, ["CLUSTER", "SLOTS"]))
          : fromShards(shards, endpoint);
      if (loaded.masters.length === 0) {
        throw new AppError("backend_unavailable", "ERR the cluster has no master with slots");
      }
      return loaded;
    });
    this.current = map;
    this.loadedAt = Date.now();
    return map;
  }

  /** Runs `fn` on a fresh admin connection to the first node that answers: known nodes, then seeds. */
  private async withAnyNode<T>(
    fn: (conn: RedisConnection, endpoint: RedisEndpoint) => Promise<T>,
  ): Promise<T> {
    const known = this.current ? [...this.current.masters, ...this.current.replicas] : [];
    const candidates = [...known.map((n) => ({ host: n.host, port: n.port })), ...this.seeds];
    let lastError: unknown;
    for (const seed of candidates) {
      const endpoint = { ...this.endpoint, ...seed };
      try {
        const conn = await RedisConnection.open(endpoint, this.connectTimeoutMs);
        try {
          return await fn(conn, endpoint);
        } finally {
          conn.destroy();
        }
      } catch (err) {
        lastError = err;
      }
    }
    throw lastError instanceof AppError
      ? lastError
      : new AppError("backend_unavailable", "ERR no Redis Cluster node answered", {
          cause: lastError,
        });
  }
}

async function expectOk(conn: RedisConnection, args: Arg[]): Promise<Reply> {
  const reply = await conn.send(args);
  if (reply.kind === "error")
    throw new AppError("backend_unavailable", `ERR ${args.join(" ")}: ${reply.value}`);
  return reply;
}

function fromShards(reply: Reply, seed: RedisEndpoint): SlotMap {
  const builder = new MapBuilder();
  for (const shard of reply.kind === "array" ? reply.value : []) {
    const fields = mapOf(shard);
    const ranges = (
      fields.get("slots")?.kind === "array" ? (fields.get("slots") as { value: Reply[] }).value : []
    ).map(intOf);
    const nodes = fields.get("nodes");
    for (const node of nodes?.kind === "array" ? nodes.value : []) {
      const f = mapOf(node);
      if (textOf(f.get("health") as Reply) === "fail") continue;
      const endpoint = textOf(f.get("endpoint") as Reply);
      const host = !endpoint || endpoint === "?" ? (textOf(f.get("ip") as Reply) ?? "") : endpoint;
      const port = intOf(f.get((seed.tls ? "tls-port" : "port") as string) ?? f.get("port"));
      const master = textOf(f.get("role") as Reply) === "master";
      builder.add({ addr: `${host}:${port}`, host, port, master }, master ? ranges : []);
    }
  }
  return builder.build();
}

function fromSlots(reply: Reply): SlotMap {
  const builder = new MapBuilder();
  for (const range of reply.kind === "array" ? reply.value : []) {
    if (range.kind !== "array") continue;
    const [start, end, ...nodes] = range.value;
    nodes.forEach((node, i) => {
      if (node.kind !== "array") return;
      const host = textOf(node.value[0] as Reply) ?? "";
      const port = intOf(node.value[1]);
      builder.add(
        { addr: `${host}:${port}`, host, port, master: i === 0 },
        i === 0 ? [intOf(start), intOf(end)] : [],
      );
    });
  }
  return builder.build();
}

class MapBuilder {
  private readonly owners = new Array<string>(SLOT_COUNT).fill("");
  private readonly nodes = new Map<string, ClusterNode & { firstSlot: number }>();

  add(node: ClusterNode, ranges: number[]): void {
    const entry = this.nodes.get(node.addr) ?? { ...node, firstSlot: SLOT_COUNT };
    this.nodes.set(node.addr, entry);
    for (let i = 0; i + 1 < ranges.length; i += 2) {
      const [from, to] = [ranges[i] as number, ranges[i + 1] as number];
      entry.firstSlot = Math.min(entry.firstSlot, from);
      for (let s = from; s <= to; s++) this.owners[s] = node.addr;
    }
  }

  build(): SlotMap {
    const all = [...this.nodes.values()];
    const masters = all
      .filter((n) => n.master && n.firstSlot < SLOT_COUNT)
      .sort((a, b) => a.firstSlot - b.firstSlot);
    return {
      owners: this.owners,
      masters: masters.map(({ firstSlot: _f, ...n }) => n),
      replicas: all.filter((n) => !n.master).map(({ firstSlot: _f, ...n }) => n),
    };
  }
}

function intOf(reply: Reply | undefined): number {
  return Number(reply?.kind === "int" ? reply.value : ((reply && textOf(reply)) ?? NaN));
}

export function splitAddr(addr: string): { host: string; port: number } {
  const at = addr.lastIndexOf(":");
  return { host: addr.slice(0, at), port: Number(addr.slice(at + 1)) };
}
