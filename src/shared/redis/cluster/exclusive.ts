import { AppError } from "../../errors.js";
import type { ExclusiveConnection } from "../backend.js";
import type { RedisConnection } from "../connection.js";
import type { RedisPool } from "../pool.js";
import type { Arg, Reply } from "../resp.js";
import type { ClusterBackend, Target } from "./backend.js";
import { redirectOf, type Redirect } from "./redirect.js";

/**
 * An exclusive connection on a cluster, bound to a node lazily by what is sent first:
 * - a whole `MULTI … EXEC` goes to the master owning the transaction's slot, on a connection held
 *   just for it, and is sent again elsewhere when Redis refused it for a MOVED/ASK/TRYAGAIN
 *   (nothing ran then); keys in several slots get Redis's CROSSSLOT error and EXECABORT;
 * - anything else (SUBSCRIBE, PSUBSCRIBE, MONITOR) binds to the node of its key, or the first
 *   master for keyless commands (Redis Cluster forwards classic pub/sub messages to every node),
 *   and stays there.
 */
export class ClusterExclusive implements ExclusiveConnection {
  private bound: { conn: RedisConnection; pool: RedisPool } | undefined;
  private pushHandler: ((reply: Reply) => void) | undefined;
  private readonly closeListeners: ((err: Error) => void)[] = [];
  private destroyed = false;

  constructor(private readonly backend: ClusterBackend) {}

  get alive(): boolean {
    return this.bound ? this.bound.conn.alive : !this.destroyed;
  }

  async send(args: readonly Arg[]): Promise<Reply> {
    const [reply] = await this.sendMany([args]);
    return reply as Reply;
  }

  async sendMany(commands: readonly (readonly Arg[])[]): Promise<Reply[]> {
    if (!this.bound && isTransaction(commands)) return this.transaction(commands);
    const conn = this.bound?.conn ?? (await this.bind(commands[0] ?? []));
    return conn.sendMany(commands);
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
    if (this.bound) this.bound.pool.discard(this.bound.conn);
    this.bound = undefined;
  }

  /** Gives a bound connection back to its node's pool (the caller left it in a clean state). */
  release(): void {
    if (this.bound) this.bound.pool.release(this.bound.conn);
    this.bound = undefined;
  }

  private async bind(first: readonly Arg[]): Promise<RedisConnection> {
    if (this.destroyed)
      throw new AppError("backend_unavailable", "ERR connection closed by stashd");
    const route = await this.backend.routeOf(first);
    const pool = this.backend.pool(
      await this.backend.addrOf(route.kind === "slot" ? route.slot : undefined),
    );
    const conn = await pool.acquire();
    this.bound = { conn, pool };
    if (this.pushHandler) conn.setPushHandler(this.pushHandler);
    for (const listener of this.closeListeners.splice(0)) conn.onClose(listener);
    return conn;
  }

  private async transaction(commands: readonly (readonly Arg[])[]): Promise<Reply[]> {
    const slots = await Promise.all(
      commands.slice(1, -1).map((argv) => this.backend.slotsOf(argv)),
    );
    const slot = slots.flat()[0];
    const stray = slots.findIndex((s) => s.some((other) => other !== slot));
    if (stray >= 0) return crossSlotReplies(commands.length, stray + 1);
    return this.backend.withFailover(
      (redirect) => this.runTransaction(commands, slot, redirect),
      false,
      redirectInTransaction,
    );
  }

  private async runTransaction(
    commands: readonly (readonly Arg[])[],
    slot: number | undefined,
    redirect: Target | undefined,
  ): Promise<Reply[]> {
    const pool = this.backend.pool(redirect?.addr ?? (await this.backend.addrOf(slot)));
    const conn = await pool.acquire();
    let replies: Reply[];
    try {
      // ASKING before MULTI holds for the whole transaction.
      replies = await conn.sendMany(redirect?.asking ? [["ASKING"], ...commands] : commands);
    } catch (err) {
      pool.discard(conn);
      throw err;
    }
    pool.release(conn);
    return redirect?.asking ? replies.slice(1) : replies;
  }
}

/**
 * What Redis Cluster answers to a transaction whose keys hash to several slots, without sending
 * it (the nodes would answer MOVED instead when the slots live on different masters): QUEUED up
 * to the command that leaves the slot, CROSSSLOT for it, EXECABORT for EXEC. Nothing runs.
 */
function crossSlotReplies(count: number, stray: number): Reply[] {
  return Array.from({ length: count }, (_, i): Reply => {
    if (i === 0) return { kind: "simple", value: Buffer.from("OK") };
    if (i === count - 1) {
      return {
        kind: "error",
        value: "EXECABORT Transaction discarded because of previous errors.",
      };
    }
    if (i === stray)
      return { kind: "error", value: "CROSSSLOT Keys in request don't hash to the same slot" };
    return { kind: "simple", value: Buffer.from("QUEUED") };
  });
}

function isTransaction(commands: readonly (readonly Arg[])[]): boolean {
  const name = (argv: readonly Arg[] | undefined): string => String(argv?.[0] ?? "").toLowerCase();
  return (
    commands.length >= 2 &&
    name(commands[0]) === "multi" &&
    name(commands[commands.length - 1]) === "exec"
  );
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
