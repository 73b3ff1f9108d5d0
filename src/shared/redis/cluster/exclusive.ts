import { AppError } from "../../errors.js";
import type { ExclusiveConnection } from "../backend.js";
import type { Exchange, ExchangeOptions, RedisConnection } from "../connection.js";
import type { RedisPool } from "../pool.js";
import type { Arg, Reply } from "../resp.js";
import type { ClusterBackend, Target } from "./backend.js";
import { redirectOf, type Redirect } from "./redirect.js";

const OK: Reply = { kind: "simple", value: Buffer.from("OK") };
const CROSSSLOT = "CROSSSLOT Keys in request don't hash to the same slot";

/** A transaction between MULTI and EXEC: what was queued, for a retry elsewhere. */
interface OpenTransaction {
  body: Arg[][];
  queued: Reply[];
  slot: number | undefined;
  crossSlot: boolean;
}

/**
 * An exclusive connection on a cluster, bound to a node lazily by what is sent on it:
 * - `MULTI` is answered at once; the first commands queued after it pick the node (the master
 *   of their slot), which then gets the real MULTI and the commands. A command whose keys leave
 *   the transaction's slot is still sent, so Redis aborts the transaction (MOVED or CROSSSLOT),
 *   and its reply is Redis Cluster's `CROSSSLOT` error. When EXEC aborts because the slot moved
 *   (MOVED, ASK, TRYAGAIN: nothing ran), the whole transaction is sent again where the slot is
 *   now, and that EXEC's reply is returned;
 * - anything else (SUBSCRIBE, PSUBSCRIBE, MONITOR) binds to the node of its key, or the first
 *   master for keyless commands (Redis Cluster forwards classic pub/sub messages to every node),
 *   and stays there.
 */
export class ClusterExclusive implements ExclusiveConnection {
  private bound: { conn: RedisConnection; pool: RedisPool } | undefined;
  private tx: OpenTransaction | undefined;
  private pushHandler: ((reply: Reply) => void) | undefined;
  private readonly closeListeners: ((err: Error) => void)[] = [];
  private destroyed = false;

  constructor(private readonly backend: ClusterBackend) {}

  get alive(): boolean {
    return this.bound ? this.bound.conn.alive : !this.destroyed;
  }

  async send(args: readonly Arg[]): Promise<Reply> {
    return (await this.exchange([args])).replies[0] as Reply;
  }

  async sendMany(commands: readonly (readonly Arg[])[]): Promise<Reply[]> {
    return (await this.exchange(commands)).replies;
  }

  async exchange(
    commands: readonly (readonly Arg[])[],
    opts: ExchangeOptions = {},
  ): Promise<Exchange> {
    const [first, ...rest] = commands;
    if (!this.tx && !this.bound && first && nameOf(first) === "multi") {
      this.tx = { body: [], queued: [], slot: undefined, crossSlot: false };
      const after = rest.length > 0 ? await this.exchange(rest, shiftWatched(opts, 1)) : undefined;
      return { replies: [OK, ...(after?.replies ?? [])], bytes: after?.bytes ?? 0 };
    }
    if (this.tx) return this.inTransaction(this.tx, commands, opts);
    const conn = this.bound?.conn ?? (await this.bind(first ?? [], undefined));
    return conn.exchange(commands, opts);
  }

  setPushHandler(handler: (reply: Reply) => void): void {
    this.pushHandler = handler;
    this.bound?.conn.setPushHandler(handler);
  }

  onClose(listener: (err: Error) => void): void {
    if (this.bound) this.bound.conn.onClose(listener);
    else this.closeListeners.push(listener);
  }

  destroy(): void {
    this.destroyed = true;
    this.tx = undefined;
    if (this.bound) this.bound.pool.discard(this.bound.conn);
    this.bound = undefined;
  }

  /** Gives a bound connection back to its node's pool (the caller left it in a clean state). */
  release(): void {
    if (this.bound) this.bound.pool.release(this.bound.conn);
    this.bound = undefined;
    this.tx = undefined;
  }

  private async bind(first: readonly Arg[], slot: number | undefined): Promise<RedisConnection> {
    if (this.destroyed)
      throw new AppError("backend_unavailable", "ERR connection closed by stashd");
    const route = slot === undefined ? await this.backend.routeOf(first) : undefined;
    const target = slot ?? (route?.kind === "slot" ? route.slot : undefined);
    const pool = this.backend.pool(await this.backend.addrOf(target));
    const conn = await pool.acquire();
    this.bound = { conn, pool };
    if (this.pushHandler) conn.setPushHandler(this.pushHandler);
    for (const listener of this.closeListeners.splice(0)) conn.onClose(listener);
    return conn;
  }

  /** Queues commands (and runs EXEC) of the open transaction `tx`. */
  private async inTransaction(
    tx: OpenTransaction,
    commands: readonly (readonly Arg[])[],
    opts: ExchangeOptions,
  ): Promise<Exchange> {
    const execAt = commands.findIndex((argv) => nameOf(argv) === "exec");
    const body = (execAt < 0 ? commands : commands.slice(0, execAt)).map((a) => [...a]);
    const replies: Reply[] = [];
    if (body.length > 0) replies.push(...(await this.queue(tx, body)));
    if (execAt < 0) return { replies, bytes: 0 };
    const exec = await this.exec(tx, shiftWatched(opts, execAt));
    this.tx = undefined;
    return { replies: [...replies, ...exec.replies], bytes: exec.bytes };
  }

  private async queue(tx: OpenTransaction, body: Arg[][]): Promise<Reply[]> {
    const slots = await Promise.all(body.map((argv) => this.backend.slotsOf(argv)));
    tx.slot ??= slots.flat()[0];
    const stray = slots.map((s) => s.some((slot) => slot !== tx.slot));
    const conn = this.bound?.conn ?? (await this.openMulti(tx));
    const sent = await conn.sendMany(body);
    const queued = sent.map((reply, i) =>
      stray[i] ? { kind: "error" as const, value: CROSSSLOT } : reply,
    );
    tx.crossSlot ||= stray.some(Boolean);
    tx.body.push(...body);
    tx.queued.push(...queued);
    return queued;
  }

  /** Binds to the transaction's node and sends the real MULTI (already answered OK). */
  private async openMulti(tx: OpenTransaction): Promise<RedisConnection> {
    const conn = await this.bind([], tx.slot);
    const reply = await conn.send(["MULTI"]);
    if (reply.kind === "error") throw new AppError("redis_error", reply.value);
    return conn;
  }

  private async exec(tx: OpenTransaction, opts: ExchangeOptions): Promise<Exchange> {
    const conn = this.bound?.conn ?? (await this.openMulti(tx));
    const result = await conn.exchange([["EXEC"]], opts);
    const redirect = tx.crossSlot
      ? undefined
      : redirectInTransaction([...tx.queued, ...result.replies]);
    if (!redirect) return result;
    // Nothing ran: send the transaction again where its slot is now.
    const first = await this.backend.withFailover(
      (target) => this.runElsewhere(tx, opts, target ?? targetOf(redirect)),
      false,
      (again) => redirectInTransaction(again.replies),
    );
    const execReply = first.replies[first.replies.length - 1] as Reply;
    return { replies: [execReply], bytes: first.bytes };
  }

  /**
   * MULTI, the queued commands and EXEC on a connection of `target` (ASKING first for ASK), or
   * of the slot's master after a TRYAGAIN.
   */
  private async runElsewhere(
    tx: OpenTransaction,
    opts: ExchangeOptions,
    target: Target | undefined,
  ): Promise<Exchange> {
    const pool = this.backend.pool(target?.addr ?? (await this.backend.addrOf(tx.slot)));
    const conn = await pool.acquire();
    try {
      const head: Arg[][] = target?.asking ? [["ASKING"], ["MULTI"]] : [["MULTI"]];
      const queued = await conn.sendMany([...head, ...tx.body]);
      const exec = await conn.exchange([["EXEC"]], opts);
      pool.release(conn);
      return { replies: [...queued.slice(head.length), ...exec.replies], bytes: exec.bytes };
    } catch (err) {
      pool.discard(conn);
      throw err;
    }
  }
}

function nameOf(argv: readonly Arg[]): string {
  return String(argv[0] ?? "").toLowerCase();
}

function targetOf(redirect: NonNullable<Redirect>): Target | undefined {
  return redirect.kind === "wait"
    ? undefined
    : { addr: redirect.addr, asking: redirect.kind === "ask" };
}

function shiftWatched(opts: ExchangeOptions, by: number): ExchangeOptions {
  if (!opts.watched) return opts;
  const watched = new Set([...opts.watched].map((i) => i - by).filter((i) => i >= 0));
  return { ...opts, watched };
}

/** The redirect that made EXEC abort, if that is why it did. */
function redirectInTransaction(replies: Reply[]): Redirect {
  const exec = replies[replies.length - 1];
  if (exec?.kind !== "error" || !exec.value.startsWith("EXECABORT")) return undefined;
  for (const reply of replies) {
    const redirect = redirectOf(reply);
    if (redirect) return redirect;
  }
  return undefined;
}
