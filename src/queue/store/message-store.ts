import type { Partitions } from "./partitions.js";
import { randomBytes } from "node:crypto";
import type { QueueRedis } from "./redis.js";
import type { Arg, Reply } from "../../shared/redis/resp.js";
import type { DlqMeta, MessageMeta, MessageState } from "../domain/message.js";
import { queueKeys as K } from "./keys.js";
import { ScriptCode } from "./codes.js";
import { asArray, asBuffer, asInt, asText, checked } from "./replies.js";
import { pipeline, transitions } from "./transitions.js";
import { TurnBatch } from "./turn-batch.js";

/** A message to create: its meta, raw body and first due time. */
export interface NewMessage {
  meta: MessageMeta;
  body: Buffer;
  dueAt: number;
}

/** A lease for messages handed to the storing process at once (see Dispatcher.offer). */
export interface HandOff {
  token: string;
  leaseMs: number;
}

/** A message leased to this process for one attempt. */
export interface Claimed {
  meta: MessageMeta;
  body: Buffer;
  retried: number;
  token: string;
  /**
   * When the lease ends unless renewed, on this process's clock (ms): the claim's start plus the
   * lease, never later than the deadline Redis set on its own clock after the claim arrived.
   */
  leaseUntil: number;
}

export interface StoredMessage {
  meta: MessageMeta;
  body: Buffer;
  state: MessageState;
  retried: number;
}

/** Per-destination limits of one claim (see delivery/destination-share.ts). */
export interface ClaimFairness {
  /** Most attempts per origin, 0 for no limit. */
  cap: number;
  /** Most due entries the claim looks at. */
  scan: number;
  /** This process's attempts in flight per origin. */
  inflight: readonly (readonly [string, number])[];
}

export type Outcome = "DELIVERED" | "RETRY" | "FAILED";

/** What finish reports: recorded, finished as CANCELED instead, or the lease was lost. */
export type FinishResult =
  typeof ScriptCode.ok | typeof ScriptCode.canceled | typeof ScriptCode.leaseLost;

export interface FinishArgs {
  id: string;
  token: string;
  outcome: Outcome;
  /** JSON of the attempt (response, error, nextDeliveryTime) for the log. */
  attempt: string;
  nextDue?: number | undefined;
  dlq?: DlqMeta | undefined;
  children: NewMessage[];
}

const FINISH_KEYS = [K.due, K.active, K.pending, K.log, K.dlq];

/** One publish waiting for its turn's enqueue call. */
interface Publish {
  now: number;
  messages: NewMessage[];
  dedup: { key: string; windowMs: number; response: string } | undefined;
  lease: { token: string; leaseMs: number } | undefined;
}

export type EnqueueResult = { stored: true } | { stored: false; response: string };

/** A publish's share of a script call's size: its bodies plus about a meta each. */
const publishBytes = (p: Publish): number =>
  p.messages.reduce((n, m) => n + m.body.length + 512, 0);

/** Lease tokens: this process's random prefix and a counter, unique without a random draw each. */
const LEASE_PREFIX = randomBytes(9).toString("base64url");
let leaseSeq = 0;

export const newLeaseToken = (): string => `${LEASE_PREFIX}${(leaseSeq++).toString(36)}`;

export function messageArgs(m: NewMessage): Arg[] {
  return [
    m.meta.messageId,
    JSON.stringify(m.meta),
    m.body,
    String(m.dueAt),
    String(m.meta.timeoutMs),
  ];
}

/**
 * Typed access to the message transitions (one method per Lua script, see store/lua) plus the
 * plain reads the API needs. `now` is always passed in by the caller.
 */
export class MessageStore {
  readonly pool: QueueRedis;

  constructor(
    readonly parts: Partitions,
    private readonly logRetentionMs: number,
  ) {
    this.pool = parts.main.redis;
  }

  private head(now: number): Arg[] {
    return [K.prefix, String(now), String(Math.max(0, now - this.logRetentionMs))];
  }

  /**
   * Stores the messages; with a dedup key already taken returns the first publish's response.
   * With `lease` the (due now) messages are leased to the caller instead of waiting for a claim.
   * Publishes made in the same event-loop turn are stored by one enqueue script call (group
   * commit, see turn-batch.ts); each resolves once Redis answered that call.
   */
  enqueue(
    now: number,
    messages: NewMessage[],
    dedup?: { key: string; windowMs: number; response: string },
    lease?: { token: string; leaseMs: number },
  ): Promise<EnqueueResult> {
    return this.publishes.add({ now, messages, dedup, lease });
  }

  private readonly publishes = new TurnBatch<Publish, EnqueueResult>(
    (calls) => this.storePublishes(calls),
    { maxItems: 64, maxBytes: 1 << 20, bytes: publishBytes },
  );

  /** One enqueue script call for `calls` (see lua/enqueue.lua); a result per call, in order. */
  private storePublishes(calls: Publish[]): Promise<EnqueueResult>[] {
    const latest = Math.max(...calls.map((c) => c.now));
    const args: Arg[] = [K.prefix, String(Math.max(0, latest - this.logRetentionMs))];
    for (const { now, messages, dedup, lease } of calls) {
      const deduplicated = dedup !== undefined && dedup.windowMs > 0;
      args.push(
        String(now),
        deduplicated ? dedup.key : "",
        String(dedup?.windowMs ?? 0),
        dedup?.response ?? "",
        lease?.token ?? "",
        String(lease?.leaseMs ?? 0),
        String(messages.length),
      );
      for (const m of messages) args.push(...messageArgs(m));
    }
    const keys = [K.due, K.pending, K.log, K.active];
    const replies = transitions.enqueue.run(this.pool, keys, args).then(asArray);
    return calls.map(async (_, i): Promise<EnqueueResult> => {
      const [code, existing] = (await replies).slice(2 * i, 2 * i + 2);
      if (code && asInt(code) === ScriptCode.ok) return { stored: true };
      return { stored: false, response: asText(existing) || "[]" };
    });
  }

  /**
   * Leases up to `limit` due messages, skipping those of destinations that hold `fair.cap` of
   * the caller's attempts (`fair.inflight` per origin, see delivery/destination-share.ts) among
   * the first `fair.scan` due entries. `skipped` counts the due messages left for that reason
   * (and later ones of their FIFO queues); `atShare` are the origins skipped at their share.
   */
  async claim(
    now: number,
    limit: number,
    leaseMs: number,
    fair: ClaimFairness = { cap: 0, scan: limit, inflight: [] },
  ): Promise<{ claimed: Claimed[]; skipped: number; atShare: string[] }> {
    const token = newLeaseToken();
    const reply = await transitions.claim.run(
      this.pool,
      [K.due, K.active, K.log],
      [
        ...this.head(now),
        String(limit),
        String(leaseMs),
        token,
        String(fair.cap),
        String(fair.scan),
        ...fair.inflight.flatMap(([origin, n]) => [origin, String(n)]),
      ],
    );
    const [skipped, origins, ...flat] = asArray(reply);
    const claimed: Claimed[] = [];
    for (let i = 0; i + 3 < flat.length; i += 4) {
      claimed.push({
        meta: JSON.parse(asText(flat[i + 1]) ?? "{}") as MessageMeta,
        body: asBuffer(flat[i + 2]) ?? Buffer.alloc(0),
        retried: Number(asText(flat[i + 3]) ?? 0),
        token,
        leaseUntil: now + leaseMs,
      });
    }
    const atShare = origins ? asArray(origins).map((o) => asText(o) ?? "") : [];
    return { claimed, skipped: skipped ? asInt(skipped) : 0, atShare };
  }

  /**
   * Records the attempt's outcome (see lua/finish.lua). The finishes of one event-loop turn go to
   * Redis as one pipeline (turn-batch.ts); each resolves with its own reply.
   */
  async finish(now: number, a: FinishArgs): Promise<FinishResult> {
    const args = [
      ...this.head(now),
      a.id,
      a.token,
      a.outcome,
      a.attempt,
      String(a.nextDue ?? 0),
      a.dlq?.dlqId ?? "",
      a.dlq ? JSON.stringify(a.dlq) : "",
      ...a.children.flatMap(messageArgs),
    ];
    return asInt(await this.finishes.add(args)) as FinishResult;
  }

  private readonly finishes = new TurnBatch<Arg[], Reply>(
    (calls) => pipeline(this.pool, transitions.finish, FINISH_KEYS, calls),
    { maxItems: 256, maxBytes: 1 << 20, bytes: (args) => args.length * 64 },
  );

  /** `now` is for the log and flow-control periods; lease expiry is judged on Redis's clock. */
  async reap(now: number, limit = 1000): Promise<number> {
    const keys = [K.active, K.due, K.pending, K.log];
    return asInt(await transitions.reap.run(this.pool, keys, [...this.head(now), String(limit)]));
  }

  /**
   * Extends the leases in `held` (pairs of message id, lease token) to `leaseMs` from now on
   * Redis's clock; returns the ids whose lease is lost (their attempts must be abandoned).
   */
  async renew(leaseMs: number, held: readonly [string, string][]): Promise<Set<string>> {
    if (held.length === 0) return new Set();
    const args = [K.prefix, String(leaseMs), ...held.flat()];
    const reply = await transitions.renew.run(this.pool, [K.active], args);
    return new Set(asArray(reply).map((r) => asText(r) ?? ""));
  }

  /** The ids among `ids` whose cancel was requested while in flight (CANCEL_REQUESTED). */
  async cancelRequested(ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const replies = await this.pool.execMany(ids.map((id) => ["HGET", K.message(id), "state"]));
    const states = replies.map((r) => asText(checked(r, "cancelRequested")));
    return new Set(ids.filter((_, i) => states[i] === "CANCEL_REQUESTED"));
  }

  async cancel(now: number, ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    const keys = [K.due, K.pending, K.log];
    return asInt(await transitions.cancel.run(this.pool, keys, [...this.head(now), ...ids]));
  }

  /** Moves a DLQ entry back as the new message `m` (body taken from the entry); false if gone. */
  async retryDlq(now: number, dlqId: string, m: NewMessage): Promise<boolean> {
    const reply = await transitions.dlqRetry.run(
      this.pool,
      [K.dlq, K.due, K.pending, K.log],
      [...this.head(now), dlqId, ...messageArgs({ ...m, body: Buffer.alloc(0) })],
    );
    return asInt(reply) === ScriptCode.ok;
  }

  async get(id: string): Promise<StoredMessage | undefined> {
    return (await this.getMany([id]))[0];
  }

  /** The live messages among `ids` (missing ones are skipped), in order. */
  async getMany(ids: readonly string[]): Promise<StoredMessage[]> {
    if (ids.length === 0) return [];
    const replies = await this.pool.execMany(
      ids.map((id) => ["HMGET", K.message(id), "meta", "body", "state", "retried"]),
    );
    const out: StoredMessage[] = [];
    for (const r of replies) {
      const [meta, body, state, retried] = asArray(checked(r, "get"));
      const text = asText(meta);
      if (text === undefined) continue;
      out.push({
        meta: JSON.parse(text) as MessageMeta,
        body: asBuffer(body) ?? Buffer.alloc(0),
        state: (asText(state) ?? "CREATED") as MessageState,
        retried: Number(asText(retried) ?? 0),
      });
    }
    return out;
  }

  /** Ids of every unfinished message, oldest first. */
  async pendingIds(): Promise<string[]> {
    const reply = checked(await this.pool.exec(["ZRANGE", K.pending, "0", "-1"]), "pending");
    return asArray(reply).map((r) => asText(r) ?? "");
  }

  /** Earliest due time (after `after`, when given), or undefined when nothing waits. */
  async nextDue(after?: number): Promise<number | undefined> {
    const min = after === undefined ? "-inf" : `(${after}`;
    const reply = await this.pool.exec([
      "ZRANGEBYSCORE",
      K.due,
      min,
      "+inf",
      "WITHSCORES",
      "LIMIT",
      "0",
      "1",
    ]);
    const score = asArray(checked(reply, "nextDue"))[1];
    return score === undefined ? undefined : Number(asText(score));
  }
}
