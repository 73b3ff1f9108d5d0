import { AppError } from "../errors.js";
import type { Arg, Reply } from "./resp.js";

export interface ReplicaAckOptions {
  /** Replicas that must hold a write before it is acknowledged (capped at the online ones). */
  replicas: number;
  /** How long `WAIT` waits for them. */
  timeoutMs: number;
}

/** One Redis server (a pool of connections to it): what ReplicaAck sends through. */
export interface AckNode {
  exec(argv: readonly Arg[]): Promise<Reply>;
  /** Commands written together on one connection, replies in order. */
  execMany(commands: readonly (readonly Arg[])[]): Promise<Reply[]>;
}

/** How long a master's count of online replicas is trusted before asking again. */
const REPLICAS_TTL_MS = 1_000;

/**
 * Writes acknowledged only once replicas hold them, so that losing the master loses no
 * acknowledged write (docs/scaling.md, Failover). The commands and a `WAIT n timeout` go out
 * together through `execMany`, i.e. on one connection, and WAIT counts that connection's writes.
 * `n` is the configured count capped at the replicas the master has online now (`INFO
 * replication`, asked at most once a second per server): a master without replicas (a single
 * Redis, a promoted replica whose old master is gone) acknowledges at once, as durable as it is.
 * Fewer acknowledgements than `n` within the timeout reject with a 503: the write was applied on
 * the master and may well survive, but its durability cannot be promised.
 */
export class ReplicaAck {
  private readonly online = new WeakMap<AckNode, { at: number; count: Promise<number> }>();

  constructor(private readonly options: ReplicaAckOptions) {}

  /** `node.execMany(commands)`, then the wait for replicas when any write in it succeeded. */
  async send(node: AckNode, commands: readonly (readonly Arg[])[]): Promise<Reply[]> {
    const need = Math.min(this.options.replicas, await this.onlineReplicas(node));
    if (need <= 0) return node.execMany(commands);
    const wait = ["WAIT", String(need), String(this.options.timeoutMs)];
    const replies = await node.execMany([...commands, wait]);
    const acked = replies.pop() as Reply;
    const applied = replies.some((r) => r.kind !== "error");
    const count = acked.kind === "int" ? Number(acked.value) : 0;
    if (applied && count < need) {
      this.online.delete(node);
      throw new AppError(
        "backend_unavailable",
        `ERR the write reached ${count} of ${need} replicas within ${this.options.timeoutMs} ms; it was applied on the master but is not acknowledged`,
      );
    }
    return replies;
  }

  private onlineReplicas(node: AckNode): Promise<number> {
    if (this.options.replicas <= 0) return Promise.resolve(0);
    const known = this.online.get(node);
    if (known && Date.now() - known.at < REPLICAS_TTL_MS) return known.count;
    const count = node.exec(["INFO", "replication"]).then(countOnline);
    // A failed look-up is not remembered (nor taken as "no replicas"): the caller fails instead.
    const entry = { at: Date.now(), count };
    count.catch(() => this.online.get(node) === entry && this.online.delete(node));
    this.online.set(node, entry);
    return count;
  }
}

/** Replicas in state `online` in an `INFO replication` reply (0 for a replica or an error). */
export function countOnline(reply: Reply): number {
  if (reply.kind !== "bulk" && reply.kind !== "simple") return 0;
  const text = reply.value.toString("utf8");
  if (!/^role:master/m.test(text)) return 0;
  return (text.match(/^slave\d+:.*\bstate=online\b/gm) ?? []).length;
}
