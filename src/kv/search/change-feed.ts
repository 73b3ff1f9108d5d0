import { randomUUID } from "node:crypto";
import { RedisConnection, type RedisEndpoint } from "../../shared/redis/connection.js";
import type { Reply } from "../../shared/redis/resp.js";
import type { Logger } from "../../shared/log.js";

/**
 * Keyspace notifications of one master (docs/decisions.md, "Search index"): a subscriber
 * connection with a PSUBSCRIBE per watched prefix, and a command connection (SCAN, PUBLISH,
 * CONFIG). Redis writes a node's notifications to a subscriber in the order the writes ran, so a
 * PUBLISH on a channel only this subscriber listens to, sent after a write has been answered,
 * comes back after that write's notification: `barrier()` is WAITINDEXING's "every write so far
 * has been seen". Notifications are lossy (a dropped connection loses them): `onLost` tells the
 * owner, who rescans once the feed is back.
 */
export interface FeedEvents {
  /** A key under a watched prefix changed (or expired, or was deleted). */
  changed(key: string): void;
  /** The feed went down (messages may have been lost) or came back (`up`). */
  state(up: boolean): void;
}

const NOTIFY_FLAGS = "KA";

export class MasterFeed {
  private sub: RedisConnection | undefined;
  commands: RedisConnection | undefined;
  private readonly barrierChannel = `stashd:search:barrier:${randomUUID()}`;
  private readonly waiting = new Map<string, { resolve(): void; reject(err: Error): void }>();
  private readonly patterns = new Set<string>();
  private closed = false;
  /** False when notifications cannot be turned on (CONFIG refused): callers rescan instead. */
  notifying = false;

  constructor(
    private readonly endpoint: RedisEndpoint,
    private readonly events: FeedEvents,
    private readonly logger: Logger,
    private readonly timeoutMs: number,
  ) {}

  private get channelPrefix(): string {
    return `__keyspace@${this.endpoint.db ?? 0}__:`;
  }

  /** Connects, turns notifications on, subscribes the prefixes; throws when Redis is down. */
  async open(prefixes: Iterable<string>): Promise<void> {
    this.commands = await RedisConnection.open(this.endpoint, this.timeoutMs);
    this.notifying = await this.enableNotifications(this.commands);
    const sub = await RedisConnection.open(this.endpoint, this.timeoutMs);
    this.sub = sub;
    sub.setPushHandler((reply) => this.onPush(reply));
    const lost = () => this.lost();
    sub.onClose(lost);
    this.commands.onClose(lost);
    for (const p of prefixes) this.patterns.add(this.patternOf(p));
    sub.sendNoReply(["SUBSCRIBE", this.barrierChannel]);
    if (this.patterns.size > 0) sub.sendNoReply(["PSUBSCRIBE", ...this.patterns]);
    await this.subscribed();
  }

  /** Watches one more prefix (a new index); resolves once Redis has the subscription. */
  async watch(prefix: string): Promise<void> {
    const pattern = this.patternOf(prefix);
    if (this.patterns.has(pattern) || !this.sub) return;
    this.patterns.add(pattern);
    this.sub.sendNoReply(["PSUBSCRIBE", pattern]);
    await this.subscribed();
  }

  /** Resolves once Redis has run the subscriber's commands so far (a PING answered in order). */
  private subscribed(): Promise<void> {
    const sub = this.sub;
    return this.await((token) => {
      if (!sub?.alive) throw new Error("search feed is down");
      sub.sendNoReply(["PING", token]);
    });
  }

  /** Resolves once every notification of writes answered before the call has been handed on. */
  barrier(): Promise<void> {
    const commands = this.commands;
    return this.await(async (token) => {
      if (!commands?.alive || !this.sub?.alive) throw new Error("search feed is down");
      await commands.send(["PUBLISH", this.barrierChannel, token]);
    });
  }

  /** Sends something carrying a fresh token; resolves when the token comes back (onPush). */
  private await(send: (token: string) => void | Promise<void>): Promise<void> {
    const token = randomUUID();
    return new Promise<void>((resolve, reject) => {
      const settle = (err?: Error) => {
        clearTimeout(timer);
        this.waiting.delete(token);
        if (err) reject(err);
        else resolve();
      };
      const timer = setTimeout(() => settle(new Error("search feed timed out")), this.timeoutMs);
      this.waiting.set(token, { resolve: () => settle(), reject: settle });
      Promise.resolve()
        .then(() => send(token))
        .catch((err: Error) => settle(err));
    });
  }

  close(): void {
    this.closed = true;
    this.sub?.destroy();
    this.commands?.destroy();
  }

  private lost(): void {
    if (this.sub === undefined) return;
    this.sub.destroy();
    this.commands?.destroy();
    this.sub = undefined;
    for (const w of [...this.waiting.values()]) w.reject(new Error("search feed connection lost"));
    if (!this.closed) this.events.state(false);
  }

  private onPush(reply: Reply): void {
    if (reply.kind !== "array") return;
    const [kind, a, b] = reply.value.map((r) => (r.kind === "bulk" ? r.value.toString() : ""));
    if (kind === "message" && a === this.barrierChannel) this.waiting.get(b as string)?.resolve();
    else if (kind === "pong") this.waiting.get(a as string)?.resolve();
    else if (kind === "pmessage" && b?.startsWith(this.channelPrefix)) {
      this.events.changed(b.slice(this.channelPrefix.length));
    }
  }

  private patternOf(prefix: string): string {
    return `${this.channelPrefix}${prefix.replace(/[\\*?[\]]/g, "\\$&")}*`;
  }

  /** Adds K and A to notify-keyspace-events (kept: the flags already set); false when refused. */
  private async enableNotifications(conn: RedisConnection): Promise<boolean> {
    const got = await conn.send(["CONFIG", "GET", "notify-keyspace-events"]);
    const current =
      got.kind === "array" && got.value[1]?.kind === "bulk"
        ? got.value[1].value.toString()
        : undefined;
    if (current === undefined) return this.refused(got);
    const has = (f: string) => current.includes(f) || (f === "A" && /g.*\$.*h/.test(current));
    if (has("K") && has("A")) return true;
    const flags = [...new Set([...current, ...NOTIFY_FLAGS])].join("");
    const set = await conn.send(["CONFIG", "SET", "notify-keyspace-events", flags]);
    return set.kind === "error" ? this.refused(set) : true;
  }

  private refused(reply: Reply): boolean {
    const why = reply.kind === "error" ? reply.value : "no reply";
    this.logger.warn(
      "search: cannot turn on keyspace notifications (CONFIG refused); indexes catch up by rescans only, and SEARCH.WAITINDEXING rescans",
      { why },
    );
    return false;
  }
}
