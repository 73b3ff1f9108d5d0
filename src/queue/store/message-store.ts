import { randomBytes } from "node:crypto";
import type { Arg } from "../../shared/redis/resp.js";
import { originOf } from "../delivery/destination-share.js";
import type { DlqMeta, MessageMeta, MessageState } from "../domain/message.js";
import { fairnessOf, rotate, split, type ScriptFairness } from "./claim-plan.js";
import { AppError } from "../../shared/errors.js";
import { ScriptCode } from "./codes.js";
import type { QueueKeys } from "./keys.js";
import type { Partition, Partitions } from "./partitions.js";
import { alignedByMessage, groupBy, mergeSorted, sumByMessage } from "./spread.js";
import { sumInSteps } from "../../shared/time-slice.js";
import { asArray, asBuffer, asText, checked } from "./replies.js";
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
  /** Whether a claim that looks at all `scan` entries parks those left for their share. */
  park?: boolean;
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

const finishKeys = (K: QueueKeys) => [K.due, K.active, K.pending, K.log, K.dlq, K.dlqWorkflow];

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
/** Messages cancelled per cancel script (about 10 ms of Redis: 50 µs a message). */
const CANCEL_STEP = 200;

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

/** What one claim script (or a whole claim) answers. */
export interface ClaimResult {
  claimed: Claimed[];
  /** Due messages left because of their destination's share (see `claim`). */
  skipped: number;
  /** Origins whose messages were left because they hold their share. */
  atShare: string[];
  /**
   * How many due entries a script had looked at when it leased its last message (the most over
   * the partitions; 0 when nothing was leased): a claim whose last lease lay beyond a short scan
   * needed the long one (delivery/claim-depth.ts).
   */
  deepest: number;
  /**
   * Due entries set apart because their destination held its share (lua/includes/parking.lua):
   * more may wait behind them, so the caller claims again.
   */
  parked: number;
}

/** A claim's state across its rounds (see MessageStore.claim). */
interface ClaimRun {
  now: number;
  leaseMs: number;
  fair: ClaimFairness;
  token: string;
  /** Attempts per origin: the caller's in flight plus those claimed so far. */
  counts: Map<string, number>;
  claimed: Claimed[];
  /** Per partition, what its last script skipped. */
  skipped: Map<Partition, number>;
  /** Origins some script skipped at its part of their share. */
  reported: Set<string>;
  /** The deepest last lease of the claim's scripts (ClaimResult.deepest). */
  deepest: number;
  /** Entries the claim's scripts parked (ClaimResult.parked). */
  parked: number;
}

/** One partition's group-committed calls (turn-batch.ts): publishes and attempt outcomes. */
interface Lane {
  publishes: TurnBatch<Publish, EnqueueResult>;
  finishes: TurnBatch<Arg[], FinishResult>;
}

/**
 * Typed access to the message transitions (one method per Lua script, see store/lua) plus the
 * plain reads the API needs. `now` is always passed in by the caller.
 *
 * A message lives in the partition of its id (Partitions.ofMessage): calls by id go there, each
 * partition's publishes and outcomes are group-committed apart, and claims, the reaper and the
 * reads of the whole queue ask every partition (see `claim` for how a claim is shared).
 */
/** The 412 for a publish whose new flow-control key would pass STASHD_QUEUE_MAX_FLOW_CONTROL_KEYS. */
export function flowControlKeysFull(max: number): AppError {
  return new AppError(
    "precondition_failed",
    `max number of flow-control keys (${max}) reached: reuse keys (one per destination or tenant, not per message)`,
  );
}

/** A partition's share of the flow-control keys (a key stays in its partition; see fc-room.lua). */
export const fcKeysPerPartition = (max: number, parts: Partitions): string =>
  String(Math.ceil(max / parts.count));

export class MessageStore {
  private readonly lanes: Lane[];
  /** Where the next claim's rotation starts (see claim-plan.ts). */
  private claimStart = 0;

  constructor(
    readonly parts: Partitions,
    private readonly logRetentionMs: number,
    /** STASHD_QUEUE_MAX_FLOW_CONTROL_KEYS, shared evenly by the partitions (keys stay in theirs). */
    private readonly maxFlowControlKeys = 10_000,
  ) {
    this.lanes = parts.all.map((p) => this.laneOf(p));
  }

  private laneOf(p: Partition): Lane {
    return {
      publishes: new TurnBatch<Publish, EnqueueResult>((calls) => this.storePublishes(p, calls), {
        maxItems: 64,
        maxBytes: 1 << 20,
        bytes: publishBytes,
      }),
      finishes: new TurnBatch<Arg[], FinishResult>(
        (calls) => pipeline(p.redis, transitions.finish, finishKeys(p.keys), calls),
        { maxItems: 256, maxBytes: 1 << 20, bytes: (args) => args.length * 64 },
      ),
    };
  }

  private head(p: Partition, now: number): Arg[] {
    return [p.keys.prefix, String(now), String(Math.max(0, now - this.logRetentionMs))];
  }

  /** A new message id in the partition of message `id` (its callbacks, its DLQ entry's retry). */
  idBeside(id: string): string {
    return this.parts.newMessageId(this.parts.ofMessage(id));
  }

  /**
   * Stores the messages; with a dedup key already taken returns the first publish's response.
   * With `lease` the (due now) messages are leased to the caller instead of waiting for a claim.
   * Publishes made in the same event-loop turn are stored by one enqueue script call per
   * partition (group commit, see turn-batch.ts); each resolves once Redis answered that call.
   *
   * The messages of one call must share a partition (their ids were placed so, see
   * Partitions.place); the call goes there, and the dedup key is kept there. A call without
   * messages goes to its dedup key's partition.
   */
  enqueue(
    now: number,
    messages: NewMessage[],
    dedup?: { key: string; windowMs: number; response: string },
    lease?: { token: string; leaseMs: number },
  ): Promise<EnqueueResult> {
    const p = this.publishPartition(messages, dedup?.key);
    return this.laneAt(p).publishes.add({ now, messages, dedup, lease });
  }

  private publishPartition(messages: readonly NewMessage[], dedupKey?: string): Partition {
    const [first, ...rest] = messages.map((m) => this.parts.ofMessage(m.meta.messageId));
    if (first === undefined)
      return dedupKey === undefined ? this.parts.main : this.parts.ofName(dedupKey);
    if (rest.some((p) => p !== first)) {
      throw new Error("the messages of one publish must be placed in one queue partition");
    }
    return first;
  }

  private laneAt(p: Partition): Lane {
    return this.lanes[p.index] as Lane;
  }

  /** One enqueue script call for `calls` (see lua/enqueue.lua); a result per call, in order. */
  private storePublishes(p: Partition, calls: Publish[]): Promise<EnqueueResult>[] {
    const K = p.keys;
    const latest = Math.max(...calls.map((c) => c.now));
    const args: Arg[] = [
      K.prefix,
      String(Math.max(0, latest - this.logRetentionMs)),
      fcKeysPerPartition(this.maxFlowControlKeys, this.parts),
    ];
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
    const replies = transitions.enqueue.run(p.redis, keys, args);
    return calls.map(async (_, i): Promise<EnqueueResult> => {
      const result = (await replies)[i];
      if (result === undefined) throw new Error(`enqueue: no reply for publish ${i} of the call`);
      if (result === "tooManyFlowControlKeys") throw flowControlKeysFull(this.maxFlowControlKeys);
      return result.stored ? result : { stored: false, response: result.response || "[]" };
    });
  }

  /**
   * Leases up to `limit` due messages, skipping those of destinations that hold `fair.cap` of
   * the caller's attempts (`fair.inflight` per origin, see delivery/destination-share.ts) among
   * the first `fair.scan` due entries of each partition. `skipped` counts the due messages left
   * for that reason (and later ones of their FIFO queues); `atShare` are the origins skipped at
   * their share.
   *
   * Over several partitions the claim runs in rounds (claim-plan.ts): the partitions get shares
   * of `limit` (rotating which gets the odd ones) and are claimed from at once; what they left
   * unused is claimed from those that filled their share. A round's scripts split every
   * destination's remaining budget between them rounded up, so one claim may give a destination
   * up to (partitions - 1) attempts more than `fair.cap`. One partition: one script, as before.
   */
  async claim(
    now: number,
    limit: number,
    leaseMs: number,
    fair: ClaimFairness = { cap: 0, scan: limit, inflight: [] },
  ): Promise<ClaimResult> {
    const run: ClaimRun = {
      now,
      leaseMs,
      fair,
      token: newLeaseToken(),
      counts: new Map(fair.inflight),
      claimed: [],
      skipped: new Map(),
      reported: new Set(),
      deepest: 0,
      parked: 0,
    };
    let candidates = rotate(this.parts.all, this.claimStart++);
    while (run.claimed.length < limit && candidates.length > 0) {
      candidates = await this.claimRound(run, candidates, limit - run.claimed.length);
    }
    const atShare = [...run.reported].filter((o) => (run.counts.get(o) ?? 0) >= fair.cap);
    const skipped = [...run.skipped.values()].reduce((a, b) => a + b, 0);
    return { claimed: run.claimed, skipped, atShare, deepest: run.deepest, parked: run.parked };
  }

  /**
   * One round of a claim: `left` split over `candidates` (in order), each share claimed at once
   * in its partition. Returns the candidates of the next round: those that filled their share or
   * stopped at a destination's part of its share (see fairnessOf) while the destination has some
   * left, then those that got no share; none when the round claimed nothing.
   */
  private async claimRound(
    run: ClaimRun,
    candidates: readonly Partition[],
    left: number,
  ): Promise<Partition[]> {
    const shares = split(left, candidates.length);
    const taking = candidates.flatMap((p, i) =>
      (shares[i] ?? 0) > 0 ? [{ p, share: shares[i] ?? 0 }] : [],
    );
    const script = fairnessOf(run.fair.cap, run.counts, taking.length);
    const results = await Promise.all(
      taking.map(({ p, share }) =>
        this.claimIn(p, run.now, share, run.leaseMs, run.fair, script, run.token),
      ),
    );
    for (const [i, r] of results.entries()) {
      run.claimed.push(...r.claimed);
      for (const c of r.claimed) bump(run.counts, originOf(c.meta.url));
      run.skipped.set(taking[i]?.p as Partition, r.skipped);
      run.deepest = Math.max(run.deepest, r.deepest);
      run.parked += r.parked;
      for (const o of r.atShare) run.reported.add(o);
    }
    if (results.every((r) => r.claimed.length === 0)) return [];
    const underCap = (o: string) => (run.counts.get(o) ?? 0) < run.fair.cap;
    const again = taking.filter(
      ({ share }, i) =>
        results[i]?.claimed.length === share || (results[i]?.atShare ?? []).some(underCap),
    );
    return [...again.map(({ p }) => p), ...candidates.filter((_, i) => (shares[i] ?? 0) === 0)];
  }

  /** One claim script in partition `p` (see lua/claim.lua). */
  private async claimIn(
    p: Partition,
    now: number,
    limit: number,
    leaseMs: number,
    depth: ClaimFairness,
    fair: ScriptFairness,
    token: string,
  ): Promise<ClaimResult> {
    const K = p.keys;
    const reply = await transitions.claim.run(
      p.redis,
      [K.due, K.active, K.log, K.dueRoutes, K.parked],
      [
        ...this.head(p, now),
        String(limit),
        String(leaseMs),
        token,
        String(fair.cap),
        String(depth.scan),
        depth.park ? "1" : "0",
        ...fair.inflight.flatMap(([origin, n]) => [origin, String(n)]),
      ],
    );
    const claimed: Claimed[] = reply.messages.map((m) => ({
      meta: JSON.parse(m.meta) as MessageMeta,
      body: m.body,
      retried: m.retried,
      token,
      leaseUntil: now + leaseMs,
    }));
    const { skipped, atShare, deepest, parked } = reply;
    return { claimed, skipped, atShare, deepest, parked };
  }

  /**
   * Records the attempt's outcome (see lua/finish.lua) in the message's partition, where its
   * `children` must be placed too (`idBeside`). The finishes of one event-loop turn go to each
   * partition's Redis as one pipeline (turn-batch.ts); each resolves with its own reply.
   */
  async finish(now: number, a: FinishArgs): Promise<FinishResult> {
    const p = this.parts.ofMessage(a.id);
    const args = [
      ...this.head(p, now),
      a.id,
      a.token,
      a.outcome,
      a.attempt,
      String(a.nextDue ?? 0),
      a.dlq?.dlqId ?? "",
      a.dlq ? JSON.stringify(a.dlq) : "",
      ...a.children.flatMap(messageArgs),
    ];
    return this.laneAt(p).finishes.add(args);
  }

  /**
   * Returns expired leases in every partition (up to `limit` each); how many. `now` is for the
   * log and flow-control periods; lease expiry is judged on Redis's clock.
   */
  async reap(now: number, limit = 1000): Promise<number> {
    const counts = await this.parts.each(async (p) => {
      const K = p.keys;
      const keys = [K.active, K.due, K.pending, K.log];
      return transitions.reap.run(p.redis, keys, [...this.head(p, now), String(limit)]);
    });
    return counts.reduce((a, b) => a + b, 0);
  }

  /**
   * Extends the leases in `held` (pairs of message id, lease token) to `leaseMs` from now on
   * Redis's clock; returns the ids whose lease is lost (their attempts must be abandoned).
   */
  async renew(leaseMs: number, held: readonly [string, string][]): Promise<Set<string>> {
    const groups = groupBy(held, ([id]) => this.parts.ofMessage(id));
    const lost = await Promise.all(
      [...groups].map(async ([p, pairs]) => {
        const args = [p.keys.prefix, String(leaseMs), ...pairs.flat()];
        return transitions.renew.run(p.redis, [p.keys.active], args);
      }),
    );
    return new Set(lost.flat());
  }

  /** The ids among `ids` whose cancel was requested while in flight (CANCEL_REQUESTED). */
  async cancelRequested(ids: readonly string[]): Promise<Set<string>> {
    const states = await alignedByMessage(this.parts, ids, async (p, group) => {
      const replies = await p.redis.execMany(
        group.map((id) => ["HGET", p.keys.message(id), "state"]),
      );
      return replies.map((r) => asText(checked(r, "cancelRequested")));
    });
    return new Set(ids.filter((_, i) => states[i] === "CANCEL_REQUESTED"));
  }

  /**
   * Cancels the messages (each in its partition, CANCEL_STEP per script); how many were
   * cancelled.
   */
  cancel(now: number, ids: readonly string[]): Promise<number> {
    return sumByMessage(this.parts, ids, (p, group) =>
      sumInSteps(group, CANCEL_STEP, (step) => {
        const K = p.keys;
        const keys = [K.due, K.pending, K.log, K.parked];
        return transitions.cancel.run(p.redis, keys, [...this.head(p, now), ...step]);
      }),
    );
  }

  /**
   * Moves a DLQ entry back as the new message `m` (body taken from the entry); false if gone.
   * The entry lives in the partition of the message it holds; `m` must have an id placed there
   * (`idBeside(entry's messageId)`), so the script runs in `m`'s partition.
   */
  async retryDlq(now: number, dlqId: string, m: NewMessage): Promise<boolean> {
    const p = this.parts.ofMessage(m.meta.messageId);
    const K = p.keys;
    return transitions.dlqRetry.run(
      p.redis,
      [K.dlq, K.due, K.pending, K.log, K.dlqWorkflow],
      [...this.head(p, now), dlqId, ...messageArgs({ ...m, body: Buffer.alloc(0) })],
    );
  }

  async get(id: string): Promise<StoredMessage | undefined> {
    return (await this.getMany([id]))[0];
  }

  /** The live messages among `ids` (missing ones are skipped), in order. */
  async getMany(ids: readonly string[]): Promise<StoredMessage[]> {
    const replies = await alignedByMessage(this.parts, ids, (p, group) =>
      p.redis.execMany(
        group.map((id) => ["HMGET", p.keys.message(id), "meta", "body", "state", "retried"]),
      ),
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

  /**
   * When each of `ids` is due (ms): its score in the due set, or in its destination's parked set
   * (lua/includes/parking.lua); undefined for one in neither. Each is read in its partition with
   * ZSCORE, then for those not due HGET origin and ZSCORE in that origin's parked set: not one
   * moment, so a message moving meanwhile may read as neither (the logs show it without a time).
   */
  async dueTimes(ids: readonly string[]): Promise<(number | undefined)[]> {
    const due = await alignedByMessage(this.parts, ids, (p, group) =>
      p.redis.execMany(group.map((id) => ["ZSCORE", p.keys.due, id])),
    );
    const times = due.map((r) => optionalNumber(asText(checked(r, "dueTimes"))));
    const rest = ids.filter((_, i) => times[i] === undefined);
    if (rest.length === 0) return times;
    const origins = await alignedByMessage(this.parts, rest, (p, group) =>
      p.redis.execMany(group.map((id) => ["HGET", p.keys.message(id), "origin"])),
    );
    const originOf = new Map(rest.map((id, i) => [id, origins[i]]));
    const parked = await alignedByMessage(this.parts, rest, (p, group) =>
      p.redis.execMany(
        group.map((id) => {
          const origin = originOf.get(id);
          const name = origin ? (asText(checked(origin, "dueTimes")) ?? "") : "";
          return ["ZSCORE", p.keys.parkedDue(name), id];
        }),
      ),
    );
    let next = 0;
    return times.map((t) => {
      if (t !== undefined) return t;
      const r = parked[next++];
      return r ? optionalNumber(asText(checked(r, "dueTimes"))) : undefined;
    });
  }

  /** Every pending message's id, oldest first (tests; the bulk cancel pages: `pendingPage`). */
  async pendingIds(): Promise<string[]> {
    const ids: string[] = [];
    const until = Date.now();
    let after: PendingEntry | undefined;
    for (;;) {
      const page = await this.pendingPage(after, PENDING_PAGE, until);
      if (page.length === 0) return ids;
      for (const [id] of page) ids.push(id);
      after = page[page.length - 1];
    }
  }

  /**
   * The next `size` pending messages after `after` (a `[id, score]` of an earlier page; from the
   * first when undefined), oldest first (by the time they were stored, then by id, over every
   * partition), stored at or before `until` (ms) so a walk does not chase new messages. Memory
   * and the work per call are bounded by `size` (times the partition count): a caller walks the
   * whole set page by page, resuming after the last entry it got, whatever was removed since.
   */
  async pendingPage(
    after: PendingEntry | undefined,
    size: number,
    until: number,
  ): Promise<PendingEntry[]> {
    const lists = await this.parts.each((p) => pendingAfter(p, after, size, until));
    return lists.length === 1 ? (lists[0] ?? []) : mergeSorted(lists, byStoredTime, size);
  }

  /** Earliest due time in any partition (after `after`, when given); undefined when none. */
  async nextDue(after?: number): Promise<number | undefined> {
    const min = after === undefined ? "-inf" : `(${after}`;
    const scores = await this.parts.each(async (p) => {
      const cmd = ["ZRANGEBYSCORE", p.keys.due, min, "+inf", "WITHSCORES", "LIMIT", "0", "1"];
      const score = asArray(checked(await p.redis.exec(cmd), "nextDue"))[1];
      return score === undefined ? Infinity : Number(asText(score));
    });
    const earliest = Math.min(...scores);
    return earliest === Infinity ? undefined : earliest;
  }
}

const optionalNumber = (text: string | undefined): number | undefined =>
  text === undefined ? undefined : Number(text);

function bump(counts: Map<string, number>, origin: string): void {
  counts.set(origin, (counts.get(origin) ?? 0) + 1);
}

/** A pending message's id and the time it was stored (its score in the pending set). */
export type PendingEntry = readonly [id: string, storedAt: number];

/** The entries of one page of pending ids (pendingPage). */
const PENDING_PAGE = 1000;

/** ZRANGE's order: by score, then by id (ASCII). */
function byStoredTime(a: PendingEntry, b: PendingEntry): number {
  return a[1] - b[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
}

/**
 * One partition's first `size` pending entries after `after` stored by `until`. The set is read
 * from `after`'s score on; entries of that same score up to its id were read before and are
 * skipped, and a run of more than `size` of them is stepped over a page at a time.
 */
async function pendingAfter(
  p: Partition,
  after: PendingEntry | undefined,
  size: number,
  until: number,
): Promise<PendingEntry[]> {
  const min = after === undefined ? "-inf" : String(after[1]);
  for (let offset = 0; ; offset += size) {
    const cmd = ["ZRANGE", p.keys.pending, min, String(until), "BYSCORE"];
    const reply = await p.redis.exec([...cmd, "LIMIT", String(offset), String(size), "WITHSCORES"]);
    const flat = asArray(checked(reply, "pending"));
    const entries: PendingEntry[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const entry: PendingEntry = [asText(flat[i]) ?? "", Number(asText(flat[i + 1]))];
      if (after === undefined || byStoredTime(entry, after) > 0) entries.push(entry);
    }
    if (entries.length > 0 || flat.length < 2 * size) return entries;
  }
}
