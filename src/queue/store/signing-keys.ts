import type { QueueRedis } from "./redis.js";
import { newSigningKey } from "../domain/ids.js";
import { queueKeys as K } from "./keys.js";
import { asArray, asText, checked } from "./replies.js";
import { transitions } from "./transitions.js";

export interface SigningKeyPair {
  current: string;
  next: string;
}

/**
 * The signing keys live in the queue Redis, so every stashd process sharing it signs with the
 * same current key; each process caches them for `refreshMs` (a rotation by another process is
 * picked up within that time, by this one at once).
 */
export class SigningKeys {
  private cached: SigningKeyPair | undefined;
  private fetchedAt = 0;
  /** The read in flight: deliveries that find the cache expired together share one. */
  private fetching: Promise<SigningKeyPair> | undefined;

  constructor(
    private readonly pool: QueueRedis,
    private readonly refreshMs: number,
  ) {}

  /** Seeds the keys: `force` (set by config) overwrites, otherwise only fills in missing ones. */
  async init(pair: SigningKeyPair, force: boolean): Promise<SigningKeyPair> {
    const cmd = force ? "HSET" : "HSETNX";
    await this.pool.execMany([
      [cmd, K.signingKeys, "current", pair.current],
      [cmd, K.signingKeys, "next", pair.next],
    ]);
    return this.get(true);
  }

  async get(fresh = false): Promise<SigningKeyPair> {
    if (!fresh && this.cached && Date.now() - this.fetchedAt < this.refreshMs) return this.cached;
    if (!fresh && this.fetching) return this.fetching;
    const fetching = this.fetch();
    this.fetching = fetching;
    try {
      return await fetching;
    } finally {
      if (this.fetching === fetching) this.fetching = undefined;
    }
  }

  private async fetch(): Promise<SigningKeyPair> {
    const reply = checked(
      await this.pool.exec(["HMGET", K.signingKeys, "current", "next"]),
      "keys",
    );
    const [current, next] = asArray(reply).map((r) => asText(r) ?? "");
    this.cached = { current: current ?? "", next: next ?? "" };
    this.fetchedAt = Date.now();
    return this.cached;
  }

  async rotate(): Promise<SigningKeyPair> {
    const reply = await transitions.rotateSigningKeys.run(
      this.pool,
      [K.signingKeys],
      [newSigningKey()],
    );
    const [current, next] = asArray(reply).map((r) => asText(r) ?? "");
    this.cached = { current: current ?? "", next: next ?? "" };
    this.fetchedAt = Date.now();
    return this.cached;
  }
}
