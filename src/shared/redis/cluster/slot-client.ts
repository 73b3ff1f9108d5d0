import type { Arg, Reply } from "../resp.js";
import type { ReplicaAck } from "../replica-ack.js";
import type { ClusterBackend } from "./backend.js";
import { failedBeforeSending, isBackendDown, redirectOf, type Redirect } from "./redirect.js";

/**
 * Every command to the master that owns one slot: the client of a store whose keys all carry one
 * hash tag (the queue, docs/scaling.md). The commands of one call are written together on one
 * connection of that master, whatever their keys (SCRIPT LOAD, INFO, WAIT included).
 *
 * A command that comes back redirected or busy (MOVED, TRYAGAIN, CLUSTERDOWN…) or that certainly
 * was not sent (no master reachable) is sent again alone, after the backend's back-off, until
 * ClusterBackend's failover window has passed; a write whose connection died after it was sent
 * is not repeated (its outcome is unknown). `ASK` is waited out like TRYAGAIN rather than
 * followed: while the slot migrates, the store's scripts (which touch keys they build
 * themselves) must run on neither node, and they resume on the new owner after the MOVED.
 */
export class SlotClient {
  constructor(
    private readonly backend: ClusterBackend,
    readonly slot: number,
    private readonly ack: ReplicaAck,
  ) {}

  async exec(argv: readonly Arg[]): Promise<Reply> {
    return (await this.execMany([argv]))[0] as Reply;
  }

  async execMany(commands: readonly (readonly Arg[])[]): Promise<Reply[]> {
    let sent: Reply[] = [];
    try {
      const addr = await this.backend.addrOf(this.slot);
      sent = await this.backend.sendOn(addr, commands, { bytes: 0 });
    } catch (err) {
      if (!isBackendDown(err)) throw err;
      if (!failedBeforeSending(err) && !(await this.allReadonly(commands))) throw err;
    }
    const replies: Reply[] = [];
    for (const [i, argv] of commands.entries()) {
      const reply = sent[i];
      replies.push(reply && !redirectOf(reply) ? reply : await this.again(argv));
    }
    return replies;
  }

  /**
   * One write acknowledged once replicas hold it (ReplicaAck), on whichever master owns the slot
   * by then (redirects and failovers handled as in `execMany`).
   */
  execAcked(argv: readonly Arg[]): Promise<Reply> {
    return this.backend.withFailover(
      async (redirect) => {
        const addr = redirect?.addr ?? (await this.backend.addrOf(this.slot));
        return (await this.ack.send(this.backend.pool(addr), [argv]))[0] as Reply;
      },
      false,
      waitOnAsk,
    );
  }

  /** One command, retried through redirects and failovers. */
  private async again(argv: readonly Arg[]): Promise<Reply> {
    const readonly = await this.isReadonly(argv);
    return this.backend.withFailover(
      async (redirect) => {
        const addr = redirect?.addr ?? (await this.backend.addrOf(this.slot));
        return (await this.backend.sendOn(addr, [argv], { bytes: 0 }))[0] as Reply;
      },
      readonly,
      waitOnAsk,
    );
  }

  /** Whether the servers' command table calls the command read-only (safe to send twice). */
  private async isReadonly(argv: readonly Arg[]): Promise<boolean> {
    const route = await this.backend.routeOf(argv).catch(() => undefined);
    return route !== undefined && "readonly" in route && route.readonly;
  }

  private async allReadonly(commands: readonly (readonly Arg[])[]): Promise<boolean> {
    const flags = await Promise.all(commands.map((argv) => this.isReadonly(argv)));
    return flags.every(Boolean);
  }
}

/** MOVED and waits as redirectOf says; ASK waited out like TRYAGAIN (see SlotClient). */
function waitOnAsk(reply: Reply): Redirect {
  const redirect = redirectOf(reply);
  return redirect?.kind === "ask" ? { kind: "wait" } : redirect;
}
