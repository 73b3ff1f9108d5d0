import { AppError } from "../../errors.js";
import type { ExclusiveConnection, RedisBackend } from "../backend.js";
import type { Exchange, ExchangeOptions, RedisEndpoint } from "../connection.js";
import { RedisPool, type PoolOptions } from "../pool.js";
import type { Arg, Reply } from "../resp.js";
import { ClusterExclusive } from "./exclusive.js";
import { fanOut, scanCluster } from "./fanout.js";
import {
  failedBeforeSending,
  isBackendDown,
  redirectOf,
  retryDelay,
  type Redirect,
} from "./redirect.js";
import { hashSlot } from "./slot.js";
import { runSplit } from "./split.js";
import { keysOf, routingOf } from "./commands.js";
import { routeOf, type Route } from "./route.js";
import type { ClusterTopology, SlotMap } from "./topology.js";

export interface ClusterBackendOptions extends PoolOptions {
  /**
   * How long a command keeps being retried while its slot has no reachable master (a master
   * died and its replica is not promoted yet, or the cluster reports CLUSTERDOWN).
   */
  failoverWindowMs: number;
}

/** Where a redirect sends the next attempt. */
export interface Target {
  addr: string;
  asking: boolean;
}

/**
 * One request's reply budget (ExchangeOptions.maxReplyBytes) and what its replies cost so far.
 * Parts sent to several nodes at once each get what is left when they start, so one request's
 * replies can reach the budget once per node (docs/scaling.md, Redis Cluster).
 */
export interface Tally {
  maxReplyBytes?: number;
  bytes: number;
}

/** Redirects followed for one command before its last error reply is returned as it is. */
const MAX_REDIRECTS = 16;

/**
 * A Redis Cluster behind the RedisBackend surface (docs/scaling.md, Redis Cluster): one RedisPool
 * per node with this backend's credentials, commands routed by the slot of their keys (route.ts),
 * MOVED/ASK followed, pipelines split by node and reassembled in order, keyspace-wide commands
 * fanned out (fanout.ts), transactions kept on the one node that owns their slot.
 */
export class ClusterBackend implements RedisBackend {
  private readonly pools = new Map<string, RedisPool>();
  private closed = false;

  constructor(
    readonly topology: ClusterTopology,
    private readonly credentials: RedisEndpoint,
    private readonly options: ClusterBackendOptions,
  ) {}

  async exec(args: readonly Arg[]): Promise<Reply> {
    const [reply] = await this.execMany([args]);
    return reply as Reply;
  }

  async execMany(commands: readonly (readonly Arg[])[]): Promise<Reply[]> {
    return (await this.exchange(commands)).replies;
  }

  /**
   * Runs a pipeline: consecutive routable commands are grouped per node and sent together (each
   * node sees its commands in pipeline order); a fanned-out or split command runs alone, after
   * everything before it. Replies come back in the order of `commands`. `opts.watched` script
   * calls are watched on whichever node they go to.
   */
  async exchange(
    commands: readonly (readonly Arg[])[],
    opts: ExchangeOptions = {},
  ): Promise<Exchange> {
    const tally: Tally = { bytes: 0, ...pick(opts.maxReplyBytes) };
    const watched = opts.watched ?? new Set<number>();
    const table = await this.topology.routing();
    const routes = commands.map((argv) => routeOf(table, argv));
    const replies = new Array<Reply>(commands.length);
    const run = { commands, routes, replies, tally, watched };
    let segment: number[] = [];
    for (let i = 0; i < commands.length; i++) {
      const route = routes[i] as Route;
      if (route.kind !== "fanout" && route.kind !== "scan" && route.kind !== "split") {
        segment.push(i);
        continue;
      }
      await this.runSegment(run, segment);
      segment = [];
      replies[i] = await this.runSpread(commands[i] as Arg[], route, tally);
    }
    await this.runSegment(run, segment);
    return { replies, bytes: tally.bytes };
  }

  /** `args` on each master of the slot map as it is now, one reply per master, in its order. */
  async execOnEachMaster(args: readonly Arg[]): Promise<Reply[]> {
    const map = await this.topology.map();
    return Promise.all(
      map.masters.map(
        async (node) => (await this.sendOn(node.addr, [args], { bytes: 0 }))[0] as Reply,
      ),
    );
  }

  /** `pool.exchange` within what is left of the tally's budget; adds the cost to the tally. */
  async sendOn(
    addr: string,
    commands: readonly (readonly Arg[])[],
    tally: Tally,
    watched: ReadonlySet<number> = new Set(),
  ): Promise<Reply[]> {
    const left = tally.maxReplyBytes === undefined ? {} : pick(tally.maxReplyBytes - tally.bytes);
    const sent = await this.pool(addr).exchange(commands, {
      ...(left.maxReplyBytes === undefined
        ? {}
        : { maxReplyBytes: Math.max(0, left.maxReplyBytes) }),
      ...(watched.size > 0 ? { watched } : {}),
    });
    tally.bytes += sent.bytes;
    return sent.replies;
  }

  acquire(): Promise<ExclusiveConnection> {
    if (this.closed) throw new AppError("backend_unavailable", "ERR stashd is shutting down");
    return Promise.resolve(new ClusterExclusive(this));
  }

  release(conn: ExclusiveConnection): void {
    (conn as ClusterExclusive).release();
  }

  discard(conn: ExclusiveConnection): void {
    conn.destroy();
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.pools.values()].map((p) => p.close()));
  }

  /** The pool of one node, opened on first use. */
  pool(addr: string): RedisPool {
    let pool = this.pools.get(addr);
    if (!pool) {
      if (this.closed) throw new AppError("backend_unavailable", "ERR stashd is shutting down");
      pool = new RedisPool(this.topology.nodeEndpoint(addr, this.credentials), this.options);
      this.pools.set(addr, pool);
    }
    return pool;
  }

  /** The node a routed command goes to now; `slot` undefined means "any master". */
  async addrOf(slot: number | undefined): Promise<string> {
    const map = await this.topology.map();
    return ownerOf(map, slot);
  }

  /** Route of a command (resolving `getkeys` routes through the server). */
  async routeOf(argv: readonly Arg[]): Promise<Route> {
    const route = routeOf(await this.topology.routing(), argv);
    return route.kind === "getkeys" ? this.askKeys(argv, route.readonly) : route;
  }

  /** Slots of every key of a command (empty for keyless ones). */
  async slotsOf(argv: readonly Arg[]): Promise<number[]> {
    const table = await this.topology.routing();
    const routing = routingOf(table, argv);
    const keys = routing ? keysOf(routing, argv) : [];
    if (keys !== undefined) return keys.map(hashSlot);
    const route = await this.routeOf(argv);
    return route.kind === "slot" ? [route.slot] : [];
  }

  /**
   * One command with the whole redirect and failover handling: MOVED updates the map and goes
   * to the new owner, ASK sends ASKING + the command to the importing node, TRYAGAIN / CLUSTERDOWN
   * and unreachable masters are retried with back-off until `failoverWindowMs` has passed.
   */
  async execRouted(
    argv: readonly Arg[],
    route: Route,
    tally: Tally = { bytes: 0 },
    watched = false,
  ): Promise<Reply> {
    const resolved = route.kind === "getkeys" ? await this.askKeys(argv, route.readonly) : route;
    if (resolved.kind !== "slot" && resolved.kind !== "any") {
      return this.runSpread(argv, resolved, tally);
    }
    const slot = resolved.kind === "slot" ? resolved.slot : undefined;
    return this.withFailover(
      async (redirect) => {
        const addr = redirect?.addr ?? (await this.addrOf(slot));
        if (!redirect?.asking) {
          return (await this.sendOn(addr, [argv], tally, new Set(watched ? [0] : [])))[0] as Reply;
        }
        const sent = await this.sendOn(
          addr,
          [["ASKING"], argv],
          tally,
          new Set(watched ? [1] : []),
        );
        return sent[1] as Reply;
      },
      resolved.readonly,
      redirectOf,
    );
  }

  /**
   * Runs `attempt` until its result holds no redirect: the retry loop shared by single commands
   * and transactions. `attempt` gets where the last result redirected to, if anywhere; a result
   * still redirecting after the limits is returned as it is (the client sees Redis's error).
   */
  async withFailover<T>(
    attempt: (redirect: Target | undefined) => Promise<T>,
    readonly: boolean,
    redirectIn: (result: T) => Redirect,
  ): Promise<T> {
    const deadline = Date.now() + this.options.failoverWindowMs;
    let redirect: Target | undefined;
    let redirects = 0;
    for (let tries = 0; ; tries++) {
      let result: T;
      try {
        result = await attempt(redirect);
      } catch (err) {
        const retryable = isBackendDown(err) && (readonly || failedBeforeSending(err));
        if (!retryable || Date.now() > deadline) throw err;
        await retryDelay(tries);
        await this.topology.refresh().catch(() => undefined);
        redirect = undefined;
        continue;
      }
      const next = redirectIn(result);
      if (!next) return result;
      if (next.kind === "wait") {
        if (Date.now() > deadline) return result;
        await retryDelay(tries);
        void this.topology.refresh().catch(() => undefined);
        redirect = undefined;
        continue;
      }
      if (++redirects > MAX_REDIRECTS) return result;
      if (next.kind === "moved") this.topology.moved(next.slot, next.addr);
      redirect = { addr: next.addr, asking: next.kind === "ask" };
    }
  }

  private runSpread(argv: readonly Arg[], route: Route, tally: Tally): Promise<Reply> {
    if (route.kind === "scan") {
      return this.withFailover(() => scanCluster(this, argv, tally), true, redirectOf);
    }
    if (route.kind === "split") return runSplit(this, route, tally);
    if (route.kind !== "fanout") return this.execRouted(argv, route, tally);
    return this.withFailover(() => fanOut(this, argv, route, tally), true, redirectOf);
  }

  /** Sends one segment of a pipeline, grouped per node; redirected commands are re-run alone. */
  private async runSegment(run: PipelineRun, indices: number[]): Promise<void> {
    if (indices.length === 0) return;
    const { commands, routes, replies, tally, watched } = run;
    const map = await this.topology.map().catch(() => undefined);
    const groups = new Map<string, number[]>();
    for (const i of indices) {
      const route = routes[i] as Route;
      const addr =
        map && route.kind !== "getkeys"
          ? ownerOf(map, route.kind === "slot" ? route.slot : undefined)
          : "";
      groups.set(addr, [...(groups.get(addr) ?? []), i]);
    }
    await Promise.all(
      [...groups].map(async ([addr, group]) => {
        const sent = addr === "" ? [] : await this.sendGroup(addr, run, group);
        const again: number[] = [];
        group.forEach((i, j) => {
          const reply = sent[j];
          if (reply && !redirectOf(reply)) replies[i] = reply;
          else again.push(i);
        });
        for (const i of again) {
          const argv = commands[i] as Arg[];
          replies[i] = await this.execRouted(argv, routes[i] as Route, tally, watched.has(i));
        }
      }),
    );
  }

  /** One node's share of a pipeline; [] (all to be re-run) when no connection could be opened. */
  private async sendGroup(addr: string, run: PipelineRun, group: number[]): Promise<Reply[]> {
    const local = new Set<number>();
    group.forEach((i, j) => run.watched.has(i) && local.add(j));
    try {
      return await this.sendOn(
        addr,
        group.map((i) => run.commands[i] as Arg[]),
        run.tally,
        local,
      );
    } catch (err) {
      const allReadonly = group.every((i) => {
        const r = run.routes[i] as Route;
        return "readonly" in r && r.readonly;
      });
      if (isBackendDown(err) && (allReadonly || failedBeforeSending(err))) return [];
      throw err;
    }
  }

  /** COMMAND GETKEYS on a master, for key specs stashd cannot follow by itself. */
  private async askKeys(argv: readonly Arg[], readonly: boolean): Promise<Route> {
    const reply = await this.pool(await this.addrOf(undefined)).exec([
      "COMMAND",
      "GETKEYS",
      ...argv,
    ]);
    const first = reply.kind === "array" ? reply.value[0] : undefined;
    if (first?.kind !== "bulk") return { kind: "any", readonly };
    return { kind: "slot", slot: hashSlot(first.value), readonly };
  }
}

interface PipelineRun {
  commands: readonly (readonly Arg[])[];
  routes: Route[];
  replies: Reply[];
  tally: Tally;
  watched: ReadonlySet<number>;
}

function pick(maxReplyBytes: number | undefined): { maxReplyBytes?: number } {
  return maxReplyBytes === undefined ? {} : { maxReplyBytes };
}

/** Owner of a slot; for keyless commands (`slot` undefined) the first master. */
export function ownerOf(map: SlotMap, slot: number | undefined): string {
  const owner = slot === undefined ? undefined : map.owners[slot];
  return owner || (map.masters[0]?.addr ?? "");
}
