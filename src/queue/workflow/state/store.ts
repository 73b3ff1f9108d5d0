import { AppError } from "../../../shared/errors.js";
import type { AttemptResult } from "../../domain/message.js";
import type { Partition, Partitions } from "../../store/partitions.js";
import type { Arg, Reply } from "../../../shared/redis/resp.js";
import {
  fcKeysPerPartition,
  flowControlKeysFull,
  messageArgs,
  type HandOff,
  type NewMessage,
} from "../../store/message-store.js";
import { ScriptCode } from "../../store/codes.js";
import { asArray, asBuffer, asInt, asText, checked } from "../../store/replies.js";
import { transitions as T } from "../../store/transitions.js";
import type { RunConfig, RunRecord, RunState } from "./run.js";
import { RunLocator } from "./locate.js";
import { recordStepError, recordStepInfo, stepRecords, type StepRecords } from "./step-records.js";

/** Most notifications kept per run and event for waits to come (docs/workflow.md §11). */
export const MAX_KEPT_EVENTS = 100;

export type WaitResult = "ended" | "registered" | { kept: string };
export type ReleaseResult = "released" | "again" | "taken" | "ended";
export type KeepResult = "ended" | "kept" | "full" | { waiter: string };

/** Waiters of an event read per HSCAN (WorkflowStore.waiters). */
const WAITER_PAGE = "200";

const NIL: Reply = { kind: "nil", array: false };

/** Most entries one run's step list may hold (docs/workflow.md §11); one more is a 412. */
export const MAX_RUN_ENTRIES = 1000;

/** An entry to append: with `message` a new queue message, without it only the entry. */
export interface Append {
  id: string;
  entry: string;
  message?: NewMessage | undefined;
}

export type AppendResult = "ok" | "ended" | "full";

const JSON_FIELDS = new Set(["config", "invoker", "failure", "canceled"]);
const NUMBER_FIELDS = new Set(["createdAt", "completedAt"]);

/** A run's entry in the runs index (`wfruns`). */
export interface RunIndexEntry {
  runId: string;
  createdAt: number;
}

/**
 * Workflow run records and their transitions (store/lua/workflow-*.lua, one atomic script
 * each), beside the message store whose message layout they share. See docs/workflow.md §3.
 *
 * A run and everything of it (its hash, step list, messages, waits, kept notifications) lives
 * in one queue partition, so that each transition stays one script: the partition of its
 * flow-control key when it has one, else of its id (`placeRun`); its messages get ids that live
 * there (`messageId`). Later calls name only the run id, whose partition the RunLocator finds.
 */
export class WorkflowStore {
  private readonly runs: RunLocator;

  constructor(
    readonly parts: Partitions,
    private readonly logRetentionMs: number,
    private readonly maxEntries: number,
    /**
     * STASHD_QUEUE_MAX_FLOW_CONTROL_KEYS: a trigger, step or wait naming a new key past it is a
     * 412, as a publish is (store/lua/includes/fc-room.lua).
     */
    private readonly maxFlowControlKeys = 10_000,
  ) {
    this.runs = new RunLocator(parts);
  }

  /**
   * The partition a new run goes to: its flow-control key's (where every message of that key
   * must be, for admission), else its id's.
   */
  placeRun(runId: string, flowControlKey: string | undefined): Partition {
    return this.parts.place({ flowControl: [flowControlKey] }) ?? this.parts.ofName(runId);
  }

  /** The partition run `runId` lives in (undefined when no partition has it). */
  partitionOf(runId: string): Promise<Partition | undefined> {
    return this.runs.find(runId);
  }

  /**
   * A new id for a message of the run in `p`. A message with a flow-control key of another
   * partition cannot join the run (its admission and the run's state would be in two
   * partitions): 400, as for a publish whose queue and key are apart.
   */
  messageId(p: Partition, flowControlKey: string | undefined): string {
    const bound = this.parts.place({ flowControl: [flowControlKey] });
    if (bound !== undefined && bound !== p) {
      throw new AppError(
        "bad_request",
        `flow-control key ${flowControlKey} falls in another queue partition than the ` +
          `workflow run; give it the run's flow-control key's hash tag`,
      );
    }
    return this.parts.newMessageId(p);
  }

  /**
   * Runs `fn` on the run's partition; `none` when no partition has the run. When the cached
   * partition answers `missing` the run may have moved (started again elsewhere): `fn` runs
   * once more on the partition found by looking.
   */
  private async onRun<T>(
    runId: string,
    fn: (p: Partition) => Promise<T>,
    missing: (result: T) => boolean,
    none: T,
  ): Promise<T> {
    const cached = this.runs.cached(runId);
    const p = cached ?? (await this.runs.search(runId));
    if (!p) return none;
    const result = await fn(p);
    if (!cached || this.parts.count === 1 || !missing(result)) return result;
    const found = await this.runs.search(runId);
    return found && found !== p ? fn(found) : result;
  }

  /** The keys a run's entries and their messages touch (start and append). */
  private entryKeys(p: Partition, runId: string): string[] {
    const Q = p.keys;
    const run = [Q.workflowRun(runId), Q.workflowSteps(runId), Q.workflowMessages(runId)];
    return [Q.due, Q.pending, Q.log, ...run];
  }

  private head(p: Partition, now: number): Arg[] {
    return [p.keys.prefix, String(now), String(Math.max(0, now - this.logRetentionMs))];
  }

  /** The partition's share of the flow-control keys (a script argument). */
  private fcKeys(): string {
    return fcKeysPerPartition(this.maxFlowControlKeys, this.parts);
  }

  private fcKeysFull(): AppError {
    return flowControlKeysFull(this.maxFlowControlKeys);
  }

  /**
   * Makes room for run `runId` in `p`: an active run of that id in another partition is
   * returned (its first message id: the start is then a duplicate); an ended one is removed, so
   * that the id is found in `p` only. Two starts of one ended id with flow-control keys of
   * different partitions at the same moment could still both succeed (docs/workflow.md §3).
   */
  private async leaveOthers(p: Partition, runId: string): Promise<string | undefined> {
    if (this.parts.count === 1) return undefined;
    for (const old of await this.runs.others(runId, p)) {
      const Q = old.keys;
      const reply = await old.redis.exec(["HMGET", Q.workflowRun(runId), "state", "initId"]);
      const [state, initId] = asArray(checked(reply, "workflow run")).map(asText);
      if (state === "RUN_STARTED") return initId ?? "";
      const keys = [
        Q.workflowRun,
        Q.workflowSteps,
        Q.workflowMessages,
        Q.workflowNotes,
        Q.workflowStepInfo,
        Q.workflowErrors,
      ].map((k) => k(runId));
      await old.redis.execMany([
        ["DEL", ...keys],
        ["ZREM", Q.workflowRuns, runId],
      ]);
    }
    return undefined;
  }

  /**
   * Creates the run in `p` (see `placeRun`; its messages' ids must live there) with its first
   * entries (a trigger: one, with its message); the active run's first message id instead when
   * the run is active. With `lease`, its new messages due by `now` and not flow-controlled are
   * leased to the caller (local hand-off, see Dispatcher.offer).
   */
  async start(
    now: number,
    p: Partition,
    runId: string,
    fields: Record<string, Arg>,
    items: readonly Append[],
    lease?: HandOff,
  ): Promise<{ created: true } | { created: false; firstId: string }> {
    const active = await this.leaveOthers(p, runId);
    if (active !== undefined) return { created: false, firstId: active };
    const pairs = Object.entries(fields).flat();
    const reply = await T.workflowStart.run(
      p.redis,
      [...this.entryKeys(p, runId), p.keys.workflowRuns, p.keys.active],
      [
        ...this.head(p, now),
        runId,
        ...leaseArgs(lease),
        this.fcKeys(),
        String(pairs.length / 2),
        ...pairs,
        ...items.flatMap(appendArgs),
      ],
    );
    if (reply === "tooManyFlowControlKeys") throw this.fcKeysFull();
    if (reply.created) {
      this.runs.remember(runId, p);
      await recordStepInfo(p, runId, items);
    }
    return reply;
  }

  /**
   * Appends `items` (whose messages' ids live in the run's partition) to the active run's step
   * list. With `lease`, their new messages due by `now` and not flow-controlled are leased to
   * the caller (local hand-off, see Dispatcher.offer).
   */
  async append(
    now: number,
    runId: string,
    items: readonly Append[],
    lease?: HandOff,
  ): Promise<AppendResult> {
    const args = items.flatMap(appendArgs);
    const appended = async (p: Partition): Promise<AppendResult> => {
      const reply = await T.workflowAppend.run(
        p.redis,
        [...this.entryKeys(p, runId), p.keys.active],
        [
          ...this.head(p, now),
          String(this.maxEntries),
          ...leaseArgs(lease),
          this.fcKeys(),
          ...args,
        ],
      );
      if (reply === ScriptCode.tooManyFlowControlKeys) throw this.fcKeysFull();
      if (reply !== ScriptCode.ok) return reply === ScriptCode.tooManySteps ? "full" : "ended";
      await recordStepInfo(p, runId, items);
      return "ok";
    };
    return this.onRun(runId, appended, (r) => r === "ended", "ended");
  }

  /** Ends the run if active; the ids of its messages to cancel, or undefined when not active. */
  async end(
    now: number,
    runId: string,
    state: Exclude<RunState, "RUN_STARTED">,
    extra: Record<string, string> = {},
  ): Promise<string[] | undefined> {
    const ended = async ({ redis, keys: Q }: Partition) => {
      const reply = await T.workflowEnd.run(
        redis,
        [
          Q.workflowRun(runId),
          Q.workflowMessages(runId),
          Q.workflowSteps(runId),
          Q.workflowNotes(runId),
          Q.workflowStepInfo(runId),
          Q.workflowErrors(runId),
        ],
        [String(now), state, String(this.logRetentionMs), ...Object.entries(extra).flat()],
      );
      return reply;
    };
    return this.onRun(runId, ended, (r) => r === undefined, undefined);
  }

  /**
   * Registers run `runId`'s wait for `eventId` with its timeout message (store/lua/workflow-wait.lua), in the
   * run's partition: each partition has its own waiters of an event (see `waiters`).
   */
  async wait(
    now: number,
    runId: string,
    eventId: string,
    waiter: string,
    timeout: NewMessage,
    /** The message a notification will make (its flow-control key is made with the wait). */
    notified: NewMessage | undefined,
  ): Promise<WaitResult> {
    const waited = async (p: Partition): Promise<WaitResult> => {
      const Q = p.keys;
      const reply = await T.workflowWait.run(
        p.redis,
        [
          Q.workflowWaiters(eventId),
          Q.workflowNotes(runId),
          Q.workflowRun(runId),
          Q.workflowMessages(runId),
          Q.due,
          Q.pending,
          Q.log,
        ],
        [
          ...this.head(p, now),
          runId,
          eventId,
          waiter,
          ...messageArgs(timeout),
          this.fcKeys(),
          notified ? JSON.stringify(notified.meta) : "",
        ],
      );
      if (reply === "tooManyFlowControlKeys") throw this.fcKeysFull();
      if (reply !== "registered") return reply;
      const id = timeout.meta.messageId;
      await recordStepInfo(p, runId, [{ id, entry: "", message: timeout }]);
      return "registered";
    };
    return this.onRun(runId, waited, (r) => r === "ended", "ended");
  }

  /** Ends a wait exactly once (store/lua/workflow-release.lua); `result.message` absent = the timeout itself. */
  async release(
    now: number,
    runId: string,
    eventId: string,
    token: string,
    result: Append,
  ): Promise<ReleaseResult> {
    const m = result.message;
    const group = m ? messageArgs(m) : [result.id, "", "", "0", "0"];
    const released = async (p: Partition): Promise<ReleaseResult> => {
      const Q = p.keys;
      const reply = await T.workflowRelease.run(
        p.redis,
        [
          Q.workflowWaiters(eventId),
          Q.workflowRun(runId),
          Q.workflowSteps(runId),
          Q.workflowMessages(runId),
          Q.due,
          Q.pending,
          Q.log,
        ],
        [...this.head(p, now), runId, token, ...group, result.entry],
      );
      if (reply === ScriptCode.ok) {
        await recordStepInfo(p, runId, [result]);
        return "released";
      }
      if (reply === ScriptCode.duplicate) return "again";
      return reply === ScriptCode.unchanged ? "taken" : "ended";
    };
    return this.onRun(runId, released, (r) => r === "ended", "ended");
  }

  /** A run-scoped notification: the waiter to release, or the data kept (store/lua/workflow-keep.lua). */
  async keep(runId: string, eventId: string, data: string): Promise<KeepResult> {
    const kept = async ({ redis, keys: Q }: Partition): Promise<KeepResult> => {
      const reply = await T.workflowKeep.run(
        redis,
        [Q.workflowWaiters(eventId), Q.workflowNotes(runId), Q.workflowRun(runId)],
        [runId, eventId, data, String(MAX_KEPT_EVENTS)],
      );
      return reply;
    };
    return this.onRun(runId, kept, (r) => r === "ended", "ended");
  }

  /**
   * Waiters of `eventId` in every partition, as pages of `[run id, waiter JSON]` pairs (HSCAN,
   * about WAITER_PAGE a page: an event may have a waiter per active run, so they are never read
   * all at once). A run id may come twice: while an ended run's stale waiter is left in an old
   * partition, or when HSCAN gives an entry again (a release checks the waiter's token, so a
   * second release of one wait does nothing).
   */
  async *waiters(eventId: string): AsyncGenerator<[string, string][]> {
    for (const { redis, keys } of this.parts.all) {
      let cursor = "0";
      do {
        const scan = ["HSCAN", keys.workflowWaiters(eventId), cursor, "COUNT", WAITER_PAGE];
        const [next, flat] = asArray(checked(await redis.exec(scan), "waiters"));
        cursor = asText(next) ?? "0";
        yield pairsOf(asArray(flat ?? NIL).map((r: Reply) => asText(r) ?? ""));
      } while (cursor !== "0");
    }
  }

  async get(runId: string): Promise<RunRecord | undefined> {
    const read = async ({ redis, keys }: Partition) => {
      const reply = checked(await redis.exec(["HGETALL", keys.workflowRun(runId)]), "workflow run");
      const flat = asArray(reply);
      if (flat.length === 0) return undefined;
      const rec: Record<string, unknown> = { runId };
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const name = asText(flat[i]) ?? "";
        const raw = asBuffer(flat[i + 1]) ?? Buffer.alloc(0);
        rec[name] = fieldValue(name, raw);
      }
      return rec as unknown as RunRecord;
    };
    return this.onRun(runId, read, (r) => r === undefined, undefined);
  }

  /**
   * State and configuration of the run (undefined when unknown) and the partition it lives in;
   * no payload read.
   */
  async config(
    runId: string,
  ): Promise<{ state: string; config: RunConfig; part: Partition } | undefined> {
    const read = async (part: Partition) => {
      const reply = await part.redis.exec([
        "HMGET",
        part.keys.workflowRun(runId),
        "state",
        "config",
      ]);
      const [state, config] = asArray(checked(reply, "workflow run")).map(asText);
      if (state === undefined || config === undefined) return undefined;
      return { state, config: JSON.parse(config) as RunConfig, part };
    };
    return this.onRun(runId, read, (r) => r === undefined, undefined);
  }

  /** True while `messageId` is one of the run's messages (until the run ends or restarts). */
  async hasMessage(runId: string, messageId: string): Promise<boolean> {
    const has = async ({ redis, keys }: Partition) => {
      const reply = await redis.exec(["SISMEMBER", keys.workflowMessages(runId), messageId]);
      return asInt(checked(reply, "run messages")) === 1;
    };
    return this.onRun(runId, has, (r) => !r, false);
  }

  /** Ids of the run's messages not known finished. */
  async messageIds(runId: string): Promise<string[]> {
    const ids = async ({ redis, keys }: Partition) => {
      const reply = await redis.exec(["SMEMBERS", keys.workflowMessages(runId)]);
      return asArray(checked(reply, "run messages")).map((x: Reply) => asText(x) ?? "");
    };
    return this.onRun(runId, ids, (r) => r.length === 0, []);
  }

  /** When the run was created (ms), undefined when unknown. */
  async createdAt(runId: string): Promise<number | undefined> {
    const read = async ({ redis, keys }: Partition) => {
      const reply = await redis.exec(["HGET", keys.workflowRun(runId), "createdAt"]);
      const text = asText(checked(reply, "workflow run"));
      return text === undefined ? undefined : Number(text);
    };
    return this.onRun(runId, read, (r) => r === undefined, undefined);
  }

  /** Step entries (JSON strings) of the run, in list order. */
  async entries(runId: string): Promise<string[]> {
    const read = async ({ redis, keys }: Partition) => {
      const reply = await redis.exec(["LRANGE", keys.workflowSteps(runId), "0", "-1"]);
      return asArray(checked(reply, "steps")).map((r: Reply) => asText(r) ?? "");
    };
    return this.onRun(runId, read, (r) => r.length === 0, []);
  }

  /**
   * Sets plain record fields of an existing run (outcomes kept for logs; no state change). The
   * partition is looked up afresh: a stale one would get a stray record.
   */
  async setFields(runId: string, fields: Record<string, string>): Promise<void> {
    const p = await this.runs.search(runId);
    if (!p) return;
    const pairs = Object.entries(fields).flat();
    checked(await p.redis.exec(["HSET", p.keys.workflowRun(runId), ...pairs]), "workflow run");
  }

  /** Appends a failed attempt of message `messageId` to its run's error list (logs). */
  async recordError(
    runId: string,
    messageId: string,
    r: AttemptResult,
    error: string,
    time: number,
  ): Promise<void> {
    const p = await this.runs.find(runId);
    if (p) await recordStepError(p, runId, messageId, r, error, time);
  }

  /** What the run's messages recorded for the logs (see step-records.ts). */
  async records(runId: string): Promise<StepRecords> {
    const p = await this.runs.find(runId);
    return p ? stepRecords(p, runId) : { info: new Map(), errors: new Map() };
  }

  /**
   * Up to `count` run ids, newest first (createdAt, then id, both descending: a total order over
   * every partition), starting at `from` (a `[createdAt, runId]` position, exclusive) or at the
   * newest. Each partition's page is read at once and the pages merged, so the order and the
   * cursor positions are those of one partition holding every run.
   */
  async runPage(from: [number, string] | undefined, count: number): Promise<RunIndexEntry[]> {
    const pages = await this.parts.each(async (p) => {
      const page = await partitionRunPage(p, from, count);
      for (const e of page) this.runs.remember(e.runId, p);
      return page;
    });
    return pages.flat().sort(newestFirst).slice(0, count);
  }

  /** Forgets index entries of runs whose records expired (in whichever partition). */
  async forget(runIds: readonly string[]): Promise<void> {
    if (runIds.length === 0) return;
    await this.parts.each(async ({ redis, keys }) =>
      checked(await redis.exec(["ZREM", keys.workflowRuns, ...runIds]), "forget"),
    );
  }
}

/** Newest first, same-millisecond runs by descending id (the order of REV BYSCORE). */
const newestFirst = (a: RunIndexEntry, b: RunIndexEntry): number =>
  b.createdAt - a.createdAt || (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0);

/** One partition's page of `WorkflowStore.runPage`. */
async function partitionRunPage(
  { redis, keys }: Partition,
  from: [number, string] | undefined,
  count: number,
): Promise<RunIndexEntry[]> {
  const max = from ? String(from[0]) : "+inf";
  const reply = await redis.exec([
    "ZRANGE",
    keys.workflowRuns,
    max,
    "-inf",
    "BYSCORE",
    "REV",
    "WITHSCORES",
    "LIMIT",
    "0",
    String(count + 50),
  ]);
  const out: RunIndexEntry[] = [];
  for (const [runId, score] of pairsOf(
    asArray(checked(reply, "workflow runs")).map((r: Reply) => asText(r) ?? ""),
  )) {
    const createdAt = Number(score);
    // Same-millisecond runs come in descending id order: skip those at or before the cursor.
    if (from && createdAt === from[0] && runId >= from[1]) continue;
    out.push({ runId, createdAt });
  }
  return out.slice(0, count);
}

/** `[a, b, c, d]` as `[[a, b], [c, d]]`. */
function pairsOf(flat: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i] ?? "", flat[i + 1] ?? ""]);
  return out;
}

function fieldValue(name: string, raw: Buffer): unknown {
  if (name === "body") return raw;
  const text = raw.toString("utf8");
  if (JSON_FIELDS.has(name)) return JSON.parse(text) as unknown;
  if (NUMBER_FIELDS.has(name)) return Number(text);
  return text;
}

/** The lease token and length of the start and append scripts ('' = no hand-off). */
const leaseArgs = (lease: HandOff | undefined): Arg[] => [
  lease?.token ?? "",
  String(lease?.leaseMs ?? 0),
];

/** One entry group of the start and append scripts: a message (or '' meta) and its entry. */
function appendArgs(a: Append): Arg[] {
  return a.message ? [...messageArgs(a.message), a.entry] : [a.id, "", "", "0", "0", a.entry];
}
