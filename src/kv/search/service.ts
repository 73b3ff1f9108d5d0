import type { Config } from "../../config/schema.js";
import { messageOf } from "../../shared/errors.js";
import type { Logger } from "../../shared/log.js";
import type { RedisBackend } from "../../shared/redis/backend.js";
import type { RedisConnection, RedisEndpoint } from "../../shared/redis/connection.js";
import { MasterFeed } from "./change-feed.js";
import { SearchError } from "./errors.js";
import { LiveIndex } from "./live-index.js";
import { schedulerOf } from "./scheduler.js";
import { sameDefinition, type IndexDef } from "./schema.js";

/**
 * The search indexes of one KV database in this process (docs/decisions.md, "Search index").
 * Definitions and aliases live in Redis, in two hashes under one hash tag (so a cluster keeps
 * them on one master); every command reads the definition it names, so a drop or re-creation by
 * another stashd process is seen at once. The in-memory indexes are built on first use and kept
 * current by the masters' keyspace notifications (change-feed.ts) plus a rescan every
 * STASHD_SEARCH_RESCAN_INTERVAL_MS and after a feed comes back.
 */
export const DEFINITIONS_KEY = "{stashd:search}:indexes";
export const ALIASES_KEY = "{stashd:search}:aliases";

/** What the service needs of the database (KvDatabase provides it). */
export interface SearchHost {
  readonly serverAdmin: RedisBackend;
  readonly endpoint: RedisEndpoint;
  readonly config: Config;
  readonly logger: Logger;
  masterEndpoints(): Promise<RedisEndpoint[]>;
}

export class SearchService {
  private readonly live = new Map<string, LiveIndex>();
  private feeds: MasterFeed[] = [];
  private feedsOpen: Promise<void> | undefined;
  private feedsUp = false;
  private timer: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly host: SearchHost) {}

  private get redis(): RedisBackend {
    return this.host.serverAdmin;
  }

  // ---- definitions ----

  /** The definition stored under `name`, or undefined. */
  async definition(name: string): Promise<IndexDef | undefined> {
    const reply = await this.redis.exec(["HGET", DEFINITIONS_KEY, name]);
    if (reply.kind === "error") throw new SearchError(reply.value);
    return reply.kind === "bulk" ? (JSON.parse(reply.value.toString()) as IndexDef) : undefined;
  }

  /** The index `name` names (directly or by alias), built and current, or undefined. */
  async index(name: string): Promise<LiveIndex | undefined> {
    let def = await this.definition(name);
    if (def === undefined) {
      const target = await this.aliasTarget(name);
      if (target !== undefined) def = await this.definition(target);
    }
    if (def === undefined) {
      this.forget(name);
      return undefined;
    }
    const index = this.ensure(def);
    await index.ready.catch((err: unknown) => {
      throw asSearchError(err, `ERR search index '${def.name}' could not be built`);
    });
    return index;
  }

  /** 1 when made, 0 when EXISTSOK found the same definition; an error otherwise. */
  async create(def: IndexDef, existsOk: boolean): Promise<number> {
    const made = await this.redis.exec(["HSETNX", DEFINITIONS_KEY, def.name, JSON.stringify(def)]);
    if (made.kind === "error") throw new SearchError(made.value);
    if (made.kind === "int" && made.value === "1") {
      this.ensure(def);
      return 1;
    }
    const existing = await this.definition(def.name);
    if (existsOk && existing !== undefined && sameDefinition(existing, def)) return 0;
    throw new SearchError(
      existsOk
        ? `ERR index '${def.name}' exists with another definition`
        : `ERR index '${def.name}' already exists`,
    );
  }

  async drop(name: string): Promise<number> {
    const reply = await this.redis.exec(["HDEL", DEFINITIONS_KEY, name]);
    if (reply.kind === "error") throw new SearchError(reply.value);
    this.forget(name);
    return reply.kind === "int" ? Number(reply.value) : 0;
  }

  async names(): Promise<string[]> {
    const reply = await this.redis.exec(["HKEYS", DEFINITIONS_KEY]);
    return reply.kind === "array"
      ? reply.value.map((r) => (r as { value: Buffer }).value.toString())
      : [];
  }

  /**
   * WAITINDEXING: every write answered before the call is in the index once this resolves
   * (the feeds' barriers, then the pending reads); without notifications, a full rescan.
   */
  async waitIndexing(index: LiveIndex): Promise<void> {
    await index.ready;
    if (this.feedsUp && this.feeds.every((f) => f.notifying)) {
      try {
        await Promise.all(this.feeds.map((f) => f.barrier()));
        await index.flush();
        return;
      } catch {
        // The feed went down meanwhile: the rescan below is the safe answer.
      }
    }
    await this.reindex(index);
  }

  /** SEARCH.REINDEX: a full scan of the index's keys now. */
  async reindex(index: LiveIndex): Promise<void> {
    await index.rescan().catch((err: unknown) => {
      throw asSearchError(err, `ERR search index '${index.def.name}' could not be scanned`);
    });
  }

  // ---- aliases ----

  async aliasTarget(alias: string): Promise<string | undefined> {
    const reply = await this.redis.exec(["HGET", ALIASES_KEY, alias]);
    return reply.kind === "bulk" ? reply.value.toString() : undefined;
  }

  /** 1 when new, 2 when it pointed elsewhere (Upstash's answers). */
  async addAlias(alias: string, index: string): Promise<number> {
    const before = await this.aliasTarget(alias);
    await this.redis.exec(["HSET", ALIASES_KEY, alias, index]);
    return before === undefined || before === index ? 1 : 2;
  }

  async deleteAlias(alias: string): Promise<number> {
    const reply = await this.redis.exec(["HDEL", ALIASES_KEY, alias]);
    return reply.kind === "int" ? Number(reply.value) : 0;
  }

  async aliases(): Promise<[string, string][]> {
    const reply = await this.redis.exec(["HGETALL", ALIASES_KEY]);
    const flat =
      reply.kind === "array"
        ? reply.value.map((r) => (r as { value: Buffer }).value.toString())
        : [];
    const pairs: [string, string][] = [];
    for (let i = 0; i + 1 < flat.length; i += 2)
      pairs.push([flat[i] as string, flat[i + 1] as string]);
    return pairs;
  }

  // ---- the live indexes ----

  /** The live index of `def`, started if new (or if the stored one was re-created). */
  private ensure(def: IndexDef): LiveIndex {
    const current = this.live.get(def.name);
    if (current && current.def.id === def.id) return current;
    const index = new LiveIndex(
      def,
      {
        reader: this.redis,
        masters: () => this.masters(),
        scheduler: schedulerOf(this.host.config),
      },
      this.host.config.searchMaxDocuments,
    );
    this.live.set(def.name, index);
    index.ready = this.openFeeds()
      .then(() =>
        Promise.all(this.feeds.map((f) => Promise.all(def.prefixes.map((p) => f.watch(p))))),
      )
      .catch((err: unknown) => this.feedFailed(err))
      .then(() => index.rescan());
    index.ready.catch((err: unknown) => {
      if (this.live.get(def.name) === index) this.live.delete(def.name);
      this.host.logger.warn("search: index build failed", { index: def.name, err: String(err) });
    });
    this.startTimer();
    return index;
  }

  private forget(name: string): void {
    this.live.delete(name);
  }

  private async masters(): Promise<RedisConnection[]> {
    await this.openFeeds().catch((err: unknown) => this.feedFailed(err));
    const conns = this.feeds
      .map((f) => f.commands)
      .filter((c): c is RedisConnection => c?.alive === true);
    if (conns.length !== this.feeds.length || conns.length === 0) {
      throw new SearchError("ERR search: Redis is unreachable, the index cannot be scanned now");
    }
    return conns;
  }

  private openFeeds(): Promise<void> {
    this.feedsOpen ??= this.connectFeeds();
    return this.feedsOpen;
  }

  private async connectFeeds(): Promise<void> {
    const endpoints = await this.host.masterEndpoints();
    const prefixes = new Set([...this.live.values()].flatMap((i) => i.def.prefixes));
    const feeds = endpoints.map(
      (e) =>
        new MasterFeed(
          e,
          {
            changed: (key) => this.changed(key),
            state: (up) => (up ? undefined : this.feedLost()),
          },
          this.host.logger,
          this.host.config.redisConnectTimeoutMs,
        ),
    );
    this.feeds = feeds;
    try {
      await Promise.all(feeds.map((f) => f.open(prefixes)));
      this.feedsUp = true;
    } catch (err) {
      for (const f of feeds) f.close();
      throw err;
    }
  }

  private changed(key: string): void {
    for (const index of this.live.values()) index.changed(key);
  }

  private feedFailed(err: unknown): void {
    this.host.logger.warn("search: keyspace notifications unavailable, will retry", {
      err: String(err),
    });
    this.feedLost();
  }

  /** A feed dropped: reconnect after a pause, then rescan every index (events were lost). */
  private feedLost(): void {
    this.feedsUp = false;
    this.feedsOpen = undefined;
    for (const f of this.feeds) f.close();
    if (this.closed || this.retry) return;
    this.retry = setTimeout(
      () => {
        this.retry = undefined;
        void this.openFeeds()
          .then(() => this.rescanAll())
          .catch((err: unknown) => this.feedFailed(err));
      },
      Math.max(50, this.host.config.redisRetryBackoffMs * 10),
    );
    this.retry.unref();
  }

  private async rescanAll(): Promise<void> {
    for (const index of [...this.live.values()]) {
      for (const f of this.feeds) for (const p of index.def.prefixes) await f.watch(p);
      await index.rescan();
    }
  }

  /** Every interval: drop indexes dropped elsewhere, rescan the others (lost notifications). */
  private startTimer(): void {
    const every = this.host.config.searchRescanIntervalMs;
    if (this.timer || every <= 0) return;
    this.timer = setInterval(() => void this.reconcile().catch(() => undefined), every);
    this.timer.unref();
  }

  private async reconcile(): Promise<void> {
    for (const [name, index] of [...this.live]) {
      const def = await this.definition(name);
      if (def?.id !== index.def.id) this.forget(name);
      else await index.rescan();
    }
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    clearTimeout(this.retry);
    for (const f of this.feeds) f.close();
    this.live.clear();
  }
}

/** A SearchError as it is, any other failure (Redis down mid-scan) as one saying what failed. */
function asSearchError(err: unknown, what: string): SearchError {
  return err instanceof SearchError ? err : new SearchError(`${what}: ${messageOf(err)}`);
}

/** Checks a name given to SEARCH.* (index or alias). */
export function checkName(name: string): string {
  if (name.length === 0 || name.length > 256)
    throw new SearchError("ERR index names take 1 to 256 characters");
  return name;
}
