import type { Config } from "../../config/schema.js";
import { AppError } from "../../shared/errors.js";
import { checkDestinations } from "../delivery/destination-policy.js";
import { buildMeta, dedupKey, type Target } from "../domain/build.js";
import type { PublishOptions } from "../domain/publish-options.js";
import type { MessageStore, NewMessage } from "../store/message-store.js";
import type { Partition, Partitions } from "../store/partitions.js";
import type { QueueStore } from "../store/queue-store.js";
import type { TopicStore, UrlGroup } from "../store/topic-store.js";

/**
 * The one way messages come into being: publish, enqueue, batch items and schedule fires all go
 * through `produce`. Workflow step messages are the one exception (workflow/engine/produce.ts): a run's
 * step-list append must be atomic with storing the message, so they use the same option parsing,
 * message building and destination checks but their own store script. In order:
 *
 * 1. destination → targets: one URL, or every endpoint of a URL group as the group is now;
 * 2. options: the caller's parsed publish options, given the group's default headers;
 * 3. the destination policy checks every URL (unless the caller checked them when it accepted
 *    them, as schedules do at create);
 * 4. one message per target, stored atomically with the dedup key (explicit id, content hash,
 *    or the caller's key) into the due set or the FIFO queue. The messages' ids place them in
 *    one queue partition (Partitions.place): their flow-control key's and FIFO queue's (a 400
 *    when those two differ), else the dedup key's, else anywhere (random ids spread them);
 * 5. local hand-off: messages due now may be leased to this process in the same store call
 *    (Dispatcher.offer decides, counting its own slots); otherwise the dispatcher is woken for
 *    their due time.
 *
 * Nothing is stored when any step refuses: a bad option, a refused URL or a missing group is an
 * AppError (400 / 404), a queue that may not be created a 412.
 */

/** What a produce stores and where. */
export interface ProduceRequest {
  /** One URL, or a URL group by name (a message per endpoint; 404 when the group is missing). */
  to: { url: string } | { group: string };
  /**
   * The parsed publish options (see domain/publish-options.ts) at `now`; `groupHeaders` are the
   * URL group's default headers, which the request's own configuration overrides.
   */
  options(now: number, groupHeaders?: Record<string, string[]>): PublishOptions;
  body: Buffer;
  callerIP?: string | undefined;
  /** Enqueue into this FIFO queue (created on first use) instead of publishing. */
  queue?: string | undefined;
  /** Stamped on every message (schedule fires: delivered as `Upstash-Schedule-Id`). */
  scheduleId?: string | undefined;
  /**
   * The deduplication key and window, when the caller has its own (a schedule tick); otherwise
   * the options' `Upstash-Deduplication-Id` or content hash within `queueDedupWindowMs`.
   */
  dedup?: { key: string; windowMs: number } | undefined;
  /** The URLs were checked against the destination policy when the caller accepted them. */
  destinationsChecked?: boolean | undefined;
}

/** One produced message as publish answers it. */
export interface ProducedMessage {
  messageId: string;
  url: string;
}

export interface ProduceResult {
  /** False when the dedup key was taken: `messages` are then the first produce's. */
  stored: boolean;
  messages: ProducedMessage[];
  /** Sent to a URL group (publish answers an array, else one object). */
  fanOut: boolean;
  /** When the stored messages are due (ms). */
  dueAt: number;
}

/** Where produced messages may be delivered by this process at once (the Dispatcher). */
export interface LocalDelivery {
  /**
   * Stores the messages with `store`, passing a lease when this process takes them for delivery
   * at once; wakes itself for their due time otherwise. Returns what `store` returned.
   */
  offer<R extends { stored: boolean }>(
    messages: NewMessage[],
    now: number,
    store: (lease?: { token: string; leaseMs: number }) => Promise<R>,
  ): Promise<R>;
  wake(at?: number): void;
}

export interface ProduceDeps {
  messages: MessageStore;
  queues: QueueStore;
  topics: TopicStore;
  config: Config;
  /** This process's dispatcher; without one nothing is handed off or woken (the caller wakes). */
  dispatcher?: LocalDelivery | undefined;
}

export async function produce(deps: ProduceDeps, req: ProduceRequest): Promise<ProduceResult> {
  const group = "group" in req.to ? await groupOf(deps, req.to.group) : undefined;
  const now = Date.now();
  const opts = req.options(now, group?.headers);
  const targets = targetsOf(req, group);
  if (!req.destinationsChecked) {
    const urls = targets.map((t) => t.url);
    checkDestinations(deps.config, [...urls, opts.callback, opts.failureCallback]);
  }
  const key = dedupKeyOf(req, opts);
  const place = placeOf(deps.messages.parts, req, opts, key);
  const source = { scheduleId: req.scheduleId, queueName: req.queue };
  const messages: NewMessage[] = targets.map((t) => ({
    meta: buildMeta(opts, t, now, req.callerIP, deps.messages.parts.newMessageId(place), source),
    body: req.body,
    dueAt: opts.dueAt,
  }));
  const produced = messages.map((m) => ({ messageId: m.meta.messageId, url: m.meta.url }));
  const dedup = dedupOf(deps, req, key, produced);
  const result = await store(deps, req.queue, now, messages, dedup);
  const fanOut = group !== undefined;
  if (!result.stored) {
    return { stored: false, messages: firstResponse(result.response), fanOut, dueAt: opts.dueAt };
  }
  return { stored: true, messages: produced, fanOut, dueAt: opts.dueAt };
}

/**
 * The partition of a produce's messages (placed before the dedup response is built: it holds
 * their ids). Callbacks do not inherit the flow-control key, so the message's own is the only
 * one. Nothing binding them: a random partition, all of a fan-out's messages in it.
 */
function placeOf(
  parts: Partitions,
  req: ProduceRequest,
  opts: PublishOptions,
  dedup: string | undefined,
): Partition {
  const bound = parts.place({ flowControl: [opts.flowControl?.key], queue: req.queue, dedup });
  return bound ?? parts.ofMessage(parts.newMessageId());
}

async function groupOf(deps: ProduceDeps, name: string): Promise<UrlGroup> {
  const group = await deps.topics.get(name);
  if (!group) throw new AppError("not_found", "url group not found");
  return group;
}

function targetsOf(req: ProduceRequest, group: UrlGroup | undefined): Target[] {
  if (!group) return "url" in req.to ? [{ url: req.to.url }] : [];
  return group.endpoints.map((e) => ({ url: e.url, topicName: group.name, endpointName: e.name }));
}

type Dedup = { key: string; windowMs: number; response: string } | undefined;

/** The caller's dedup key, or the options' `Upstash-Deduplication-Id` or content hash. */
function dedupKeyOf(req: ProduceRequest, opts: PublishOptions): string | undefined {
  if (req.dedup) return req.dedup.key;
  const destination = "url" in req.to ? req.to.url : req.to.group;
  return dedupKey(opts, destination, req.body);
}

function dedupOf(
  deps: ProduceDeps,
  req: ProduceRequest,
  key: string | undefined,
  produced: ProducedMessage[],
): Dedup {
  if (key === undefined) return undefined;
  const windowMs = req.dedup?.windowMs ?? deps.config.queueDedupWindowMs;
  return { key, windowMs, response: JSON.stringify(produced) };
}

type Stored = { stored: true } | { stored: false; response: string };

/**
 * Into the FIFO queue, or the due set through the dispatcher's offer (local hand-off). Not an
 * async function: the publish path's promise is the store's own, not one more wrapped round it.
 */
function store(
  deps: ProduceDeps,
  queue: string | undefined,
  now: number,
  messages: NewMessage[],
  dedup: Dedup,
): Promise<Stored> {
  if (queue !== undefined) return storeInQueue(deps, queue, now, messages, dedup);
  const plain = (lease?: { token: string; leaseMs: number }) =>
    deps.messages.enqueue(now, messages, dedup, lease);
  return deps.dispatcher ? deps.dispatcher.offer(messages, now, plain) : plain();
}

async function storeInQueue(
  deps: ProduceDeps,
  queue: string,
  now: number,
  messages: NewMessage[],
  dedup: Dedup,
): Promise<Stored> {
  const result = await deps.queues.enqueue(now, queue, messages, dedup);
  if (result.stored) deps.dispatcher?.wake(messages[0]?.dueAt ?? now);
  return result;
}

/**
 * The response kept under a dedup key: `[{messageId, url}]`; a key written by an older schedule
 * fire holds bare message ids.
 */
function firstResponse(raw: string): ProducedMessage[] {
  const parsed = JSON.parse(raw) as unknown;
  if (!Array.isArray(parsed)) return [];
  return parsed.map((m: unknown) =>
    typeof m === "string" ? { messageId: m, url: "" } : (m as ProducedMessage),
  );
}
