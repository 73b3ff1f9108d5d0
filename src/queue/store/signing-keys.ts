import type { Partitions } from "./partitions.js";
import type { QueueRedis } from "./redis.js";
import { newSigningKey } from "../domain/ids.js";
import type { QueueKeys } from "./keys.js";
import { asArray, asText, checked } from "./replies.js";
import { transitions } from "./transitions.js";

export interface SigningKeyPair {
  current: string;
  next: string;
}

/**
 * The signing keys live in the queue Redis, so every stashd process sharing it signs with the
 * same current key; each process caches them. After `refreshMs` the cached pair is still handed
 * out at once while one read refreshes it (a delivery never waits for that read), so a rotation
 * by another process is used within `refreshMs` plus one read; by this one at once.
 */
export class SigningKeys {
  private cached: SigningKeyPair | undefined;
  private fetchedAt = 0;
  /** The refresh in flight: callers that need a read share one. */
  private fetching: Promise<SigningKeyPair> | undefined;

  private readonly pool: QueueRedis;
  private readonly K: QueueKeys;

  constructor(
    readonly parts: Partitions,
    private readonly refreshMs: number,
  ) {
    // The signing keys exist once for the whole queue: partition 0 (Partitions.main) holds them.
    this.pool = parts.main.redis;
    this.K = parts.main.keys;
  }

  /** Seeds the keys: `force` (set by config) overwrites, otherwise only fills in missing ones. */
  async init(pair: SigningKeyPair, force: boolean): Promise<SigningKeyPair> {
    const cmd = force ? "HSET" : "HSETNX";
    await this.pool.execMany([
      [cmd, this.K.signingKeys, "current", pair.current],
      [cmd, this.K.signingKeys, "next", pair.next],
    ]);
    return this.get(true);
  }

  /** The cached pair (refreshed in the background once stale); `fresh` reads Redis first. */
  async get(fresh = false): Promise<SigningKeyPair> {
    if (fresh) return this.fetch();
    return this.peek() ?? this.refresh();
  }

  /**
   * The cached pair at once, without a promise (a delivery's signing key), refreshed in the
   * background once stale; undefined until the first read (then `get`).
   */
  peek(): SigningKeyPair | undefined {
    const cached = this.cached;
    // A failed refresh leaves the cached pair; the next look after refreshMs tries again.
    if (cached && Date.now() - this.fetchedAt >= this.refreshMs)
      this.refresh().catch(() => undefined);
    return cached;
  }

  private refresh(): Promise<SigningKeyPair> {
    this.fetching ??= this.fetch().finally(() => {
      this.fetching = undefined;
    });
    return this.fetching;
  }

  private async fetch(): Promise<SigningKeyPair> {
    const reply = checked(
      await this.pool.exec(["HMGET", this.K.signingKeys, "current", "next"]),
      "keys",
    );
    const [current, next] = asArray(reply).map((r) => asText(r) ?? "");
    this.cached = { current: current ?? "", next: next ?? "" };
    this.fetchedAt = Date.now();
    return this.cached;
  }

  async rotate(): Promise<SigningKeyPair> {
    this.cached = await transitions.rotateSigningKeys.run(
      this.pool,
      [this.K.signingKeys],
      [newSigningKey()],
    );
    this.fetchedAt = Date.now();
    return this.cached;
  }
}
