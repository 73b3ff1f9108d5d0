import type { Config } from "../../config/schema.js";
import { messageOf } from "../../shared/errors.js";
import type { Logger } from "../../shared/log.js";
import { metrics } from "../../shared/metrics.js";
import { waitAtMost } from "../../shared/wait.js";
import { isConnectionHeader } from "../domain/headers.js";
import { newDlqId } from "../domain/ids.js";
import type { AttemptResult, DlqMeta, Headers, MessageMeta } from "../domain/message.js";
import { isNonRetryable, isSuccess, retryDelayMs } from "../domain/retry-policy.js";
import { ScriptCode } from "../store/codes.js";
import {
  newLeaseToken,
  type Claimed,
  type HandOff,
  type MessageStore,
  type NewMessage,
  type Outcome,
} from "../store/message-store.js";
import type { SigningKeys } from "../store/signing-keys.js";
import { callbackMessage, failureCallbackMessage, type CallbackContext } from "./callbacks.js";
import { DestinationShare, originOf } from "./destination-share.js";
import type { HttpClient } from "./http-client.js";
import { ClaimDepth } from "./claim-depth.js";
import { LeaseKeeper, LeaseLost } from "./leases.js";
import { signDelivery } from "./signer.js";

const CLAIM_BATCH = 64;
/**
 * Most due entries one claim looks at while skipping destinations at their share. A long claim
 * that looked at all of them parks the ones it skipped (lua/includes/parking.lua), so the next
 * claims see past them (docs/queue.md, Fairness).
 * Claims look only CLAIM_SHORT_SCAN entries past their limit, except for one long scan at least
 * every CLAIM_LONG_SCAN_EVERY_MS and every claim while long scans find messages deeper than
 * that (claim-depth.ts).
 */
const CLAIM_SCAN = 1024;
const CLAIM_SHORT_SCAN = 64;
const CLAIM_LONG_SCAN_EVERY_MS = 100;
/** After the grace period: time for aborted attempts to unwind and arrived ones to be recorded. */
const FINISH_AFTER_ABORT_MS = 2_000;

/** What a delivery sends instead of the stored body and headers; "dropped" = nothing to send. */
export type Prepared = { body: Buffer; header: MessageMeta["header"] } | "dropped" | undefined;

/** Per-message adjustments of deliveries: workflow runs (workflow/engine/delivery.ts). */
export interface DeliveryHooks {
  /** What to send instead; undefined (not a promise) when the message needs nothing prepared. */
  prepare(c: Claimed): Promise<Prepared> | undefined;
  review(c: Claimed, r: AttemptResult): AttemptResult;
  recorded(
    c: Claimed,
    outcome: Outcome,
    r: AttemptResult,
    dlq: DlqMeta | undefined,
    children: readonly NewMessage[],
  ): Promise<void>;
}

type DispatcherConfig = Pick<
  Config,
  | "queueConcurrency"
  | "queueLeaseMs"
  | "queueIdlePollMs"
  | "queueReapMs"
  | "queueBackoffScaleMs"
  | "queueMaxCallbackDepth"
  | "queueDestinationShare"
  | "queueMaxMessageBytes"
  | "queueLoggedResponseBytes"
>;

/**
 * The delivery loop of one process: claim due messages (leased), deliver them concurrently up
 * to `queueConcurrency`, record each outcome with the finish transition. It does not poll
 * tightly: it sleeps until the earliest due time (at most `queueIdlePollMs`, which is how it
 * notices other processes' publishes) and is woken at once by local publishes and by a freed
 * delivery slot. Several processes on one Redis never deliver the same attempt twice: claiming
 * is one atomic script that leases the message to this process, and an attempt never outlives
 * its lease (leases.ts). One destination holds at most its share of the slots
 * (destination-share.ts); its further messages wait in the due set while others are claimed.
 * A cancelled message's attempt is aborted (at once through `cancel`, or by the next lease
 * renewal when another process cancelled it) and recorded, which frees its slot.
 */
export class Dispatcher {
  private inflight = 0;
  /** The pump's rounds while it runs (stop waits for them before the pool closes). */
  private pumping: Promise<void> | undefined;
  private again = false;
  /** A reap in progress (stop waits for it too). */
  private reaping: Promise<void> | undefined;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private reaper: NodeJS.Timeout | undefined;
  private idleWaiters: (() => void)[] = [];
  private readonly leases: LeaseKeeper;
  /** Set when a fill stopped at the concurrency limit: a freed slot must trigger a new fill. */
  private saturated = false;
  /**
   * Attempts per destination, and the destinations whose due messages the last claim left at
   * their share (`share.blocked`): a slot freed by such a destination triggers a new fill, and
   * the due set's head (those messages) no longer sets the next wake-up.
   */
  private readonly share: DestinationShare;
  private readonly depth = new ClaimDepth(CLAIM_SCAN, CLAIM_SHORT_SCAN, CLAIM_LONG_SCAN_EVERY_MS);
  private hooks: DeliveryHooks | undefined;

  constructor(
    private readonly store: MessageStore,
    private readonly client: HttpClient,
    private readonly keys: SigningKeys,
    private readonly cfg: DispatcherConfig,
    private readonly log: Logger,
  ) {
    this.leases = new LeaseKeeper(store, cfg.queueLeaseMs, log);
    this.share = new DestinationShare(cfg.queueConcurrency, cfg.queueDestinationShare, CLAIM_BATCH);
  }

  useHooks(hooks: DeliveryHooks): void {
    this.hooks = hooks;
  }

  start(): void {
    this.reaper = setInterval(() => {
      this.reaping ??= this.reap().finally(() => (this.reaping = undefined));
    }, this.cfg.queueReapMs);
    this.leases.start();
    this.wake();
  }

  /**
   * Asks for a pump at `at` (ms; default now). Earlier requests win. A timer may fire a
   * millisecond before `Date.now()` reaches its target (timers run on another clock); the pump
   * then waits out the rest, since a claim made before the due time finds nothing due.
   */
  wake(at = 0): void {
    if (this.stopped) return;
    const delay = Math.max(0, at - Date.now());
    const target = Date.now() + delay;
    if (this.timer && this.timerAt <= target) return;
    clearTimeout(this.timer);
    this.timerAt = target;
    this.timer = setTimeout(() => this.timerFired(target), delay);
  }

  private timerFired(target: number): void {
    const early = target - Date.now();
    if (early > 0) {
      this.timer = setTimeout(() => this.timerFired(target), early);
      return;
    }
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    void this.pump();
  }

  /**
   * Local hand-off of messages being stored (produce/produce.ts, workflow/engine/produce.ts): those due
   * by `now` and not held by a flow-control key (`takesHandOff`) are, when this process has free
   * slots for all of them, stored under a lease to this process (`store` gets it; the store
   * script leases exactly those) and delivered at once, saving the claim round trip. Otherwise
   * they are stored plainly and the dispatcher wakes at their due time, except behind a
   * destination that reached its share while messages wait for it (`share.crowded`): those queue in
   * the due set, in due order, for the destination's next batch claim (see destination-share.ts)
   * instead of taking single freed slots or waking a claim each. Messages not handed off (later,
   * flow-controlled) wake the dispatcher at their due time.
   */
  async offer<R extends { stored: boolean }>(
    messages: readonly NewMessage[],
    now: number,
    store: (lease?: HandOff) => Promise<R>,
  ): Promise<R> {
    const due = messages.filter((m) => takesHandOff(m, now));
    const origins = due.map((m) => originOf(m.meta.url));
    const queued = due.length > 0 && this.share.crowded(origins);
    const reserved = due.length > 0 && !queued && this.reserve(origins);
    const lease: HandOff | undefined = reserved
      ? { token: newLeaseToken(), leaseMs: this.cfg.queueLeaseMs }
      : undefined;
    try {
      const result = await store(lease);
      if (reserved) this.unreserve(origins);
      if (!result.stored) return result;
      if (lease) {
        const leaseUntil = now + lease.leaseMs;
        for (const m of due) {
          const { meta, body } = m;
          this.run({ meta, body, retried: 0, token: lease.token, leaseUntil }, true);
        }
      }
      const handled = new Set(lease || queued ? due : []);
      const waiting = messages.filter((m) => !handled.has(m));
      if (waiting.length > 0) this.wake(Math.min(...waiting.map((m) => m.dueAt)));
      return result;
    } catch (err) {
      if (reserved) this.unreserve(origins);
      throw err;
    }
  }

  /** Takes slots for a hand-off when they are free, the destinations' shares included. */
  private reserve(origins: readonly string[]): boolean {
    const n = origins.length;
    if (this.stopped || this.inflight + n > this.cfg.queueConcurrency) return false;
    if (!this.share.fits(origins)) return false;
    this.inflight += n;
    for (const o of origins) this.share.take(o);
    return true;
  }

  private unreserve(origins: readonly string[]): void {
    this.inflight -= origins.length;
    for (const o of origins) this.share.give(o);
  }

  /**
   * Aborts this process's attempts of cancelled messages at once (their outcome is recorded as
   * CANCELED, freeing the slot); other processes notice at their next lease renewal.
   */
  cancel(ids: readonly string[]): void {
    this.leases.cancel(ids);
  }

  /**
   * Stops claiming; waits up to `graceMs` for in-flight deliveries. Then attempts still waiting
   * for their response are aborted unrecorded (their leases return them: redelivered later), and
   * the outcomes of those whose response arrived are recorded before this resolves, so the
   * caller may close the Redis pool afterwards.
   */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.reaper);
    // A claim or reap already sent must come back before the pool closes, or it fails (and
    // logs) on a closed connection; a claim's messages are then in flight, waited for below.
    // A stalled Redis is not waited for beyond the grace period.
    await waitAtMost(Promise.all([this.pumping, this.reaping]), graceMs);
    // Leases stay renewed through the grace period: an attempt still running must not be handed
    // to another process meanwhile.
    await this.idle(graceMs);
    this.leases.abandonAll("stashd is stopping");
    await this.idle(FINISH_AFTER_ABORT_MS);
    this.leases.stop();
  }

  private async idle(timeoutMs: number): Promise<void> {
    if (this.inflight <= 0) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  /** Runs pump rounds, once at a time: a call while they run asks for another round. */
  private pump(): Promise<void> {
    if (this.pumping) {
      this.again = true;
      return this.pumping;
    }
    this.pumping = this.rounds().finally(() => (this.pumping = undefined));
    return this.pumping;
  }

  private async rounds(): Promise<void> {
    try {
      // A wake while the pump awaits Redis (the claim or the next due time) sets `again`: it
      // must run another round, or it would wait for the idle poll.
      do {
        this.again = false;
        await this.fill();
        if (!this.again) await this.scheduleNext();
      } while (this.again && !this.stopped);
    } catch (err) {
      this.log.warn("dispatcher pump failed", { err: messageOf(err) });
      this.wake(Date.now() + this.cfg.queueIdlePollMs);
    }
  }

  private async fill(): Promise<void> {
    while (!this.stopped) {
      const free = this.cfg.queueConcurrency - this.inflight;
      this.saturated = free <= 0;
      if (this.saturated) return;
      const limit = Math.min(free, CLAIM_BATCH);
      const now = Date.now();
      const scan = this.depth.scan(limit, now);
      const park = scan >= CLAIM_SCAN;
      const fair = { cap: this.share.cap, scan, park, inflight: this.share.counts() };
      const { claimed, atShare, deepest, skipped, parked } = await this.store.claim(
        now,
        limit,
        this.cfg.queueLeaseMs,
        fair,
      );
      this.depth.saw(limit, deepest, now);
      // Messages of other destinations may wait behind what was parked: claim again, long.
      if (parked > 0) this.depth.keepLong(now);
      // A short scan may have stopped before messages of other destinations: look long soon.
      if (scan < CLAIM_SCAN && skipped > 0 && claimed.length < limit)
        this.wake(this.depth.nextLongAt());
      this.share.leftWaiting(atShare);
      for (const c of claimed) this.run(c, false);
      if (claimed.length < limit && parked === 0 && !this.share.refillDue()) return;
    }
  }

  /**
   * After saturation, claim again only once a batch worth of slots is free: every claim is an
   * fsync'd round trip, so refilling one slot at a time would cap deliveries at one per fsync.
   */
  private refillBelow(): number {
    const c = this.cfg.queueConcurrency;
    return c - Math.max(1, Math.min(CLAIM_BATCH, Math.floor(c / 2)));
  }

  private async scheduleNext(): Promise<void> {
    if (this.stopped || this.inflight >= this.cfg.queueConcurrency) return;
    const now = Date.now();
    // Due messages left for destinations at their share would wake this at once, again and again.
    const next = await this.store.nextDue(this.share.blocked ? now : undefined);
    const idle = now + this.cfg.queueIdlePollMs;
    this.wake(next === undefined ? idle : Math.min(next, idle));
  }

  /** Starts the attempt of a leased message: claimed, or `handedOff` when it was stored. */
  private run(c: Claimed, handedOff: boolean): void {
    metrics.attemptStarted(handedOff ? "handed_off" : "claimed");
    this.inflight++;
    const leave = this.enter(originOf(c.meta.url));
    // One reaction for both outcomes (not `.catch().finally()`: two more promises per delivery).
    const ended = (): void => {
      leave();
      this.ended();
    };
    this.attempt(c, leave).then(ended, (err: unknown) => {
      this.log.warn("delivery bookkeeping failed", { id: c.meta.messageId, err: messageOf(err) });
      ended();
    });
  }

  /** An attempt has ended: its slot is free. */
  private ended(): void {
    this.inflight--;
    if (this.inflight === 0) for (const w of this.idleWaiters.splice(0)) w();
    if (this.saturated && this.inflight <= this.refillBelow()) {
      this.saturated = false;
      this.wake();
    }
  }

  /**
   * Counts an attempt against its destination's share; the returned function gives the slot
   * back (once, later calls do nothing), waking a claim when the destination fell to its refill
   * level while messages wait for it.
   */
  private enter(origin: string): () => void {
    this.share.take(origin);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      if (this.share.give(origin)) this.wake();
    };
  }

  /**
   * One attempt under its lease. An attempt abandoned because the lease was lost or expiring is
   * not recorded: the reaper returns the message (at-least-once), which another process may
   * already be delivering. `answered` is called once the destination answered (or failed): from
   * then on the attempt no longer counts against the destination's share, only against the
   * process's concurrency, while its outcome is recorded (an fsync'd Redis write).
   */
  private async attempt(c: Claimed, answered: () => void): Promise<void> {
    const { meta } = c;
    const abort = this.leases.hold(meta.messageId, c.token, c.leaseUntil);
    try {
      // Neither waits when it need not: most messages have nothing prepared, and the signing
      // key is cached (a promise hop each would cost every delivery a microtask).
      const preparing = this.hooks?.prepare(c);
      const prepared = preparing && (await preparing);
      if (prepared === "dropped") return;
      const body = prepared?.body ?? c.body;
      const header = prepared?.header ?? meta.header;
      const key = (this.keys.peek() ?? (await this.keys.get())).current;
      const startedAt = Date.now();
      const signature = signDelivery(key, meta.url, body, startedAt);
      const result = await this.client.send({
        url: meta.url,
        method: meta.method,
        headers: deliveryHeaders(meta, header, c.retried, signature),
        body,
        timeoutMs: meta.timeoutMs,
        maxBodyBytes: responseReadLimit(meta, this.cfg),
        abort,
      });
      answered();
      this.leases.settle(meta.messageId, c.token);
      const reviewed = this.hooks ? this.hooks.review(c, result) : result;
      if (!(abort.reason instanceof LeaseLost)) await this.record(c, reviewed, startedAt);
    } finally {
      this.leases.release(meta.messageId, c.token);
    }
  }

  /** Records an attempt's outcome; `startedAt` is when its request was sent (ms). */
  private async record(c: Claimed, result: AttemptResult, startedAt: number): Promise<void> {
    const now = Date.now();
    const { meta } = c;
    const ok = isSuccess(result);
    const final = !ok && (isNonRetryable(result) || c.retried >= meta.maxRetries);
    const outcome: Outcome = ok ? "DELIVERED" : final ? "FAILED" : "RETRY";
    const scale = this.cfg.queueBackoffScaleMs;
    const nextDue =
      outcome === "RETRY"
        ? now + retryDelayMs(result, c.retried, meta.retryDelayExpression, scale, now)
        : undefined;
    const kept = this.cfg.queueLoggedResponseBytes;
    const dlq = outcome === "FAILED" ? dlqMeta(meta, result, now, kept) : undefined;
    // Fields named one by one: a spread copy (`{...c, result}`) takes V8's slow path
    // (docs/decisions.md, Hot-path objects).
    const ctx: CallbackContext = {
      meta,
      body: c.body,
      retried: c.retried,
      result,
      now,
      maxDepth: this.cfg.queueMaxCallbackDepth,
      childId: () => this.store.idBeside(meta.messageId),
    };
    const children = childMessages(ctx, dlq);
    const logged = attemptLog(result, kept);
    logged.startedAt = startedAt;
    logged.durationMs = now - startedAt;
    if (nextDue) logged.nextDeliveryTime = nextDue;
    if (dlq) logged.dlqId = dlq.dlqId;
    const attempt = JSON.stringify(logged);
    const done = await this.store.finish(now, {
      id: meta.messageId,
      token: c.token,
      outcome,
      attempt,
      nextDue,
      dlq,
      children,
    });
    // The reaper returned the message meanwhile (this process was too slow to record): it will
    // be delivered again, a duplicate if this attempt succeeded.
    if (done === ScriptCode.leaseLost)
      this.log.warn("lease lost before the outcome was recorded", { id: meta.messageId });
    else {
      metrics.delivery(outcome === "DELIVERED" ? "delivered" : final ? "failed" : "retry", {
        queueName: meta.queueName,
        url: meta.url,
        durationMs: now - startedAt,
      });
      if (this.hooks) await this.hooks.recorded(c, outcome, result, dlq, children);
    }
    // A queue message's finish may admit the queue's next message (due now): claim it.
    if (meta.queueName !== undefined) this.wake();
    let wakeAt = nextDue ?? Infinity;
    for (const m of children) wakeAt = Math.min(wakeAt, m.dueAt);
    if (Number.isFinite(wakeAt)) this.wake(wakeAt);
  }

  private async reap(): Promise<void> {
    try {
      const reaped = await this.store.reap(Date.now());
      metrics.leasesReaped(reaped);
      if (reaped > 0) this.wake();
    } catch (err) {
      this.log.warn("lease reaper failed", { err: messageOf(err) });
    }
  }
}

/**
 * Whether a message being stored may be leased to this process at once (local hand-off): due by
 * `now` and not waiting for a flow-control key's admission (fc-enter.lua). The store scripts
 * (enqueue, workflow start and append) lease exactly these when given a lease token.
 */
export function takesHandOff(m: NewMessage, now: number): boolean {
  return m.dueAt <= now && !m.meta.flowControl;
}

/** Outgoing headers of docs/qstash-protocol.md §4.1. */
/**
 * A delivery's request headers as a flat `[name, value, ...]` list: the message's own (`own`:
 * its meta's, or those a workflow hook prepared) but for connection headers (Host, Content-Length,
 * …: isConnectionHeader), then QStash's, which replace a forwarded header of the same name. A list rather than a copy of
 * `meta.header` with names added: that copy took V8's slow path, about 5 µs per delivery
 * (measured 2026-11-27, docs/benchmarks-log.md).
 */
function deliveryHeaders(meta: MessageMeta, own: Headers, retried: number, signature: string) {
  const headers: string[] = [];
  for (const name in own) {
    if (setByQStash(name, meta) || isConnectionHeader(name)) continue;
    // One line per value, as undici sends a header given several values.
    for (const value of own[name] as string[]) headers.push(name, value);
  }
  headers.push("User-Agent", "Upstash-QStash", "Upstash-Message-Id", meta.messageId);
  headers.push("Upstash-Retried", String(retried), "Upstash-Signature", signature);
  headers.push("Upstash-Hop", String((meta.hop ?? 0) + 1));
  if (meta.topicName) headers.push("Upstash-Topic-Name", meta.topicName);
  if (meta.scheduleId) headers.push("Upstash-Schedule-Id", meta.scheduleId);
  if (meta.callerIP) headers.push("Upstash-Caller-Ip", meta.callerIP);
  return headers;
}

/** Headers every delivery carries, whatever the message forwards. */
const QSTASH_HEADERS = new Set([
  "User-Agent",
  "Upstash-Hop",
  "Upstash-Message-Id",
  "Upstash-Retried",
  "Upstash-Signature",
]);

/** Whether `deliveryHeaders` sets header `name` itself for this message. */
function setByQStash(name: string, meta: MessageMeta): boolean {
  if (QSTASH_HEADERS.has(name)) return true;
  if (name === "Upstash-Topic-Name") return !!meta.topicName;
  if (name === "Upstash-Schedule-Id") return !!meta.scheduleId;
  return name === "Upstash-Caller-Ip" && !!meta.callerIP;
}

/**
 * How much of a delivery's response body is read: what a callback carries (the message size, as
 * the vendor truncates a callback body) when the message has a callback, else only what the log
 * keeps (STASHD_QUEUE_LOGGED_RESPONSE_BYTES).
 */
function responseReadLimit(
  meta: MessageMeta,
  cfg: Pick<Config, "queueMaxMessageBytes" | "queueLoggedResponseBytes">,
): number {
  return meta.callback || meta.failureCallback
    ? cfg.queueMaxMessageBytes
    : Math.min(cfg.queueLoggedResponseBytes, cfg.queueMaxMessageBytes);
}

/** The response body as logs and the DLQ keep it: its first `max` bytes, and whether cut. */
function keptBody(r: AttemptResult, max: number): { base64: string; truncated: boolean } {
  const cut = r.body.length > max;
  const body = cut ? r.body.subarray(0, max) : r.body;
  return { base64: body.toString("base64"), truncated: cut || r.truncated === true };
}

/** The callback and failure-callback messages an outcome creates (none, one or both). */
function childMessages(ctx: CallbackContext, dlq: DlqMeta | undefined): NewMessage[] {
  const children: NewMessage[] = [];
  const callback = callbackMessage(ctx);
  if (callback) children.push(callback);
  const failure = dlq && failureCallbackMessage(ctx, dlq.dlqId);
  if (failure) children.push(failure);
  return children;
}

/**
 * The attempt as the log keeps it: the response body cut to `maxBody` bytes (marked when cut).
 * Optional fields are assigned, not spread in: one object per delivery, in the same key order.
 */
export function attemptLog(r: AttemptResult, maxBody: number): Record<string, unknown> {
  const kept = keptBody(r, maxBody);
  const logged: Record<string, unknown> = {
    responseStatus: r.status,
    responseHeader: r.header,
    responseBody: kept.base64,
  };
  if (kept.truncated) logged["responseBodyTruncated"] = true;
  if (r.error || !isSuccess(r))
    logged["error"] = r.error ?? `destination responded with status ${r.status}`;
  return logged;
}

function dlqMeta(meta: MessageMeta, r: AttemptResult, now: number, maxBody: number): DlqMeta {
  const kept = keptBody(r, maxBody);
  return {
    ...meta,
    dlqId: newDlqId(now),
    failedAt: now,
    responseStatus: r.status,
    responseHeader: r.header,
    responseBodyBase64: kept.base64,
    ...(kept.truncated ? { responseBodyTruncated: true } : {}),
  };
}
