import type { Partitions } from "../store/partitions.js";
import type { QueueRedis } from "../store/redis.js";
import type { Arg, Reply } from "../../shared/redis/resp.js";
import { queueKeys as Q } from "../store/keys.js";
import { messageArgs, type HandOff, type NewMessage } from "../store/message-store.js";
import { ScriptCode } from "../store/codes.js";
import { asArray, asBuffer, asInt, asText, checked } from "../store/replies.js";
import { transitions as T } from "../store/transitions.js";
import type { RunConfig, RunRecord, RunState } from "./run.js";
import { recordStepInfo } from "./step-records.js";

/** Most notifications kept per run and event for waits to come (docs/workflow.md §11). */
export const MAX_KEPT_EVENTS = 100;

export type WaitResult = "ended" | "registered" | { kept: string };
export type ReleaseResult = "released" | "again" | "taken" | "ended";
export type KeepResult = "ended" | "kept" | "full" | { waiter: string };

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

/**
 * Workflow run records and their transitions (store/lua/workflow-*.lua, one atomic script
 * each), beside the message store whose message layout they share. See docs/workflow.md §3.
 */
export class WorkflowStore {
  readonly pool: QueueRedis;

  constructor(
    readonly parts: Partitions,
    private readonly logRetentionMs: number,
    private readonly maxEntries: number,
  ) {
    this.pool = parts.main.redis;
  }

  /** The keys a run's entries and their messages touch (start and append). */
  private entryKeys(runId: string): string[] {
    const run = [Q.workflowRun(runId), Q.workflowSteps(runId), Q.workflowMessages(runId)];
    return [Q.due, Q.pending, Q.log, ...run];
  }

  private head(now: number): Arg[] {
    return [Q.prefix, String(now), String(Math.max(0, now - this.logRetentionMs))];
  }

  /**
   * Creates the run with its first entries (a trigger: one, with its message); the active run's
   * first message id instead when the run is active. With `lease`, its new messages due by `now`
   * and not flow-controlled are leased to the caller (local hand-off, see Dispatcher.offer).
   */
  async start(
    now: number,
    runId: string,
    fields: Record<string, Arg>,
    items: readonly Append[],
    lease?: HandOff,
  ): Promise<{ created: true } | { created: false; firstId: string }> {
    const pairs = Object.entries(fields).flat();
    const reply = await T.workflowStart.run(
      this.pool,
      [...this.entryKeys(runId), Q.workflowRuns, Q.active],
      [
        ...this.head(now),
        runId,
        ...leaseArgs(lease),
        String(pairs.length / 2),
        ...pairs,
        ...items.flatMap(appendArgs),
      ],
    );
    const [flag, firstId] = asArray(reply);
    if (flag && asInt(flag) === ScriptCode.ok) {
      await recordStepInfo(this.pool, runId, items);
      return { created: true };
    }
    return { created: false, firstId: asText(firstId) ?? "" };
  }

  /**
   * Appends `items` to the active run's step list. With `lease`, their new messages due by `now`
   * and not flow-controlled are leased to the caller (local hand-off, see Dispatcher.offer).
   */
  async append(
    now: number,
    runId: string,
    items: readonly Append[],
    lease?: HandOff,
  ): Promise<AppendResult> {
    const args = items.flatMap(appendArgs);
    const reply = await T.workflowAppend.run(
      this.pool,
      [...this.entryKeys(runId), Q.active],
      [...this.head(now), String(this.maxEntries), ...leaseArgs(lease), ...args],
    );
    const code = asInt(reply);
    if (code !== ScriptCode.ok) return code === ScriptCode.tooManySteps ? "full" : "ended";
    await recordStepInfo(this.pool, runId, items);
    return "ok";
  }

  /** Ends the run if active; the ids of its messages to cancel, or undefined when not active. */
  async end(
    now: number,
    runId: string,
    state: Exclude<RunState, "RUN_STARTED">,
    extra: Record<string, string> = {},
  ): Promise<string[] | undefined> {
    const reply = await T.workflowEnd.run(
      this.pool,
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
    const [flag, ...ids] = asArray(reply);
    if (!flag || asInt(flag) !== ScriptCode.ok) return undefined;
    return ids.map((r: Reply) => asText(r) ?? "");
  }

  /** Registers run `runId`'s wait for `eventId` with its timeout message (lua/wait.lua). */
  async wait(
    now: number,
    runId: string,
    eventId: string,
    waiter: string,
    timeout: NewMessage,
  ): Promise<WaitResult> {
    const reply = await T.workflowWait.run(
      this.pool,
      [
        Q.workflowWaiters(eventId),
        Q.workflowNotes(runId),
        Q.workflowRun(runId),
        Q.workflowMessages(runId),
        Q.due,
        Q.pending,
        Q.log,
      ],
      [...this.head(now), runId, eventId, waiter, ...messageArgs(timeout)],
    );
    const [flag, data] = asArray(reply);
    const code = flag ? asInt(flag) : ScriptCode.runNotActive;
    if (code === ScriptCode.eventKept) return { kept: asText(data) ?? "" };
    if (code !== ScriptCode.ok) return "ended";
    await recordStepInfo(this.pool, runId, [
      { id: timeout.meta.messageId, entry: "", message: timeout },
    ]);
    return "registered";
  }

  /** Ends a wait exactly once (lua/release.lua); `result.message` absent = the timeout itself. */
  async release(
    now: number,
    runId: string,
    eventId: string,
    token: string,
    result: Append,
  ): Promise<ReleaseResult> {
    const m = result.message;
    const group = m ? messageArgs(m) : [result.id, "", "", "0", "0"];
    const reply = await T.workflowRelease.run(
      this.pool,
      [
        Q.workflowWaiters(eventId),
        Q.workflowRun(runId),
        Q.workflowSteps(runId),
        Q.workflowMessages(runId),
        Q.due,
        Q.pending,
        Q.log,
      ],
      [...this.head(now), runId, token, ...group, result.entry],
    );
    const code = asInt(reply);
    if (code === ScriptCode.ok) {
      await recordStepInfo(this.pool, runId, [result]);
      return "released";
    }
    if (code === ScriptCode.duplicate) return "again";
    return code === ScriptCode.unchanged ? "taken" : "ended";
  }

  /** A run-scoped notification: the waiter to release, or the data kept (lua/keep.lua). */
  async keep(runId: string, eventId: string, data: string): Promise<KeepResult> {
    const reply = await T.workflowKeep.run(
      this.pool,
      [Q.workflowWaiters(eventId), Q.workflowNotes(runId), Q.workflowRun(runId)],
      [runId, eventId, data, String(MAX_KEPT_EVENTS)],
    );
    const [flag, waiter] = asArray(reply);
    const code = flag ? asInt(flag) : ScriptCode.runNotActive;
    if (code === ScriptCode.waiting) return { waiter: asText(waiter) ?? "" };
    if (code === ScriptCode.eventKept) return "kept";
    return code === ScriptCode.tooManyKept ? "full" : "ended";
  }

  /** Waiters of `eventId`: run id -> waiter JSON. */
  async waiters(eventId: string): Promise<Map<string, string>> {
    const reply = checked(await this.pool.exec(["HGETALL", Q.workflowWaiters(eventId)]), "waiters");
    const flat = asArray(reply).map((r: Reply) => asText(r) ?? "");
    const out = new Map<string, string>();
    for (let i = 0; i + 1 < flat.length; i += 2) out.set(flat[i] ?? "", flat[i + 1] ?? "");
    return out;
  }

  async get(runId: string): Promise<RunRecord | undefined> {
    const reply = checked(await this.pool.exec(["HGETALL", Q.workflowRun(runId)]), "workflow run");
    const flat = asArray(reply);
    if (flat.length === 0) return undefined;
    const rec: Record<string, unknown> = { runId };
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const name = asText(flat[i]) ?? "";
      const raw = asBuffer(flat[i + 1]) ?? Buffer.alloc(0);
      rec[name] = fieldValue(name, raw);
    }
    return rec as unknown as RunRecord;
  }

  /** State and configuration of the run (undefined when unknown); no payload read. */
  async config(runId: string): Promise<{ state: string; config: RunConfig } | undefined> {
    const reply = await this.pool.exec(["HMGET", Q.workflowRun(runId), "state", "config"]);
    const [state, config] = asArray(checked(reply, "workflow run")).map(asText);
    if (state === undefined || config === undefined) return undefined;
    return { state, config: JSON.parse(config) as RunConfig };
  }

  /** True while `messageId` is one of the run's messages (until the run ends or restarts). */
  async hasMessage(runId: string, messageId: string): Promise<boolean> {
    const reply = await this.pool.exec(["SISMEMBER", Q.workflowMessages(runId), messageId]);
    return asInt(checked(reply, "run messages")) === 1;
  }

  /** When the run was created (ms), undefined when unknown. */
  async createdAt(runId: string): Promise<number | undefined> {
    const reply = await this.pool.exec(["HGET", Q.workflowRun(runId), "createdAt"]);
    const text = asText(checked(reply, "workflow run"));
    return text === undefined ? undefined : Number(text);
  }

  /** Step entries (JSON strings) of the run, in list order. */
  async entries(runId: string): Promise<string[]> {
    const reply = checked(
      await this.pool.exec(["LRANGE", Q.workflowSteps(runId), "0", "-1"]),
      "steps",
    );
    return asArray(reply).map((r: Reply) => asText(r) ?? "");
  }

  /** Sets plain record fields (outcomes kept for logs; no state change). */
  async setFields(runId: string, fields: Record<string, string>): Promise<void> {
    const pairs = Object.entries(fields).flat();
    checked(await this.pool.exec(["HSET", Q.workflowRun(runId), ...pairs]), "workflow run");
  }

  /**
   * Up to `count` run ids, newest first, starting at `from` (a `[createdAt, runId]` position,
   * exclusive) or at the newest. Returns ids with their createdAt scores.
   */
  async runPage(
    from: [number, string] | undefined,
    count: number,
  ): Promise<{ runId: string; createdAt: number }[]> {
    const max = from ? String(from[0]) : "+inf";
    const reply = await this.pool.exec([
      "ZRANGE",
      Q.workflowRuns,
      max,
      "-inf",
      "BYSCORE",
      "REV",
      "WITHSCORES",
      "LIMIT",
      "0",
      String(count + 50),
    ]);
    const flat = asArray(checked(reply, "workflow runs")).map((r: Reply) => asText(r) ?? "");
    const out: { runId: string; createdAt: number }[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const runId = flat[i] ?? "";
      const createdAt = Number(flat[i + 1]);
      // Same-millisecond runs come in descending id order: skip those at or before the cursor.
      if (from && createdAt === from[0] && runId >= from[1]) continue;
      out.push({ runId, createdAt });
    }
    return out.slice(0, count);
  }

  /** Forgets index entries of runs whose records expired. */
  async forget(runIds: readonly string[]): Promise<void> {
    if (runIds.length > 0)
      checked(await this.pool.exec(["ZREM", Q.workflowRuns, ...runIds]), "forget");
  }
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
