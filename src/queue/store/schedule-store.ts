import type { Partitions } from "./partitions.js";
import { AppError } from "../../shared/errors.js";
import type { QueueRedis } from "./redis.js";
import type { PublishOptions } from "../domain/publish-options.js";
import { queueKeys as K } from "./keys.js";
import { ScriptCode } from "./codes.js";
import { asArray, asBuffer, asInt, asText, checked } from "./replies.js";
import { transitions } from "./transitions.js";

/** What a schedule produces on each tick: the parsed publish configuration, minus timing. */
export type ScheduleOptions = Omit<
  PublishOptions,
  "dueAt" | "notBefore" | "dedupId" | "contentBasedDedup"
>;

/** The immutable part of a schedule, set by create/replace (the `def` JSON of its hash). */
export interface ScheduleDef {
  scheduleId: string;
  /** `Upstash-Cron` as stored (trimmed; may carry the `CRON_TZ=` prefix). */
  cron: string;
  /** URL, or the URL group's name when `group` is set. */
  destination: string;
  group?: string | undefined;
  options: ScheduleOptions;
  /** `Upstash-Delay` of each produced message. */
  delayMs: number;
  /** `Upstash-Queue-Name`: produced messages are enqueued into this FIFO queue. */
  queueName?: string | undefined;
  callerIP?: string | undefined;
  createdAt: number;
}

export interface StoredSchedule {
  def: ScheduleDef;
  body: Buffer;
  /** Next tick (ms); while paused, the tick that was next when it was paused. */
  next: number;
  /** Time of the last fire, 0 before the first. */
  last: number;
  paused: boolean;
  /** Message id -> state recorded at the last fire. */
  states: Record<string, string>;
  error: string;
}

const FINAL = new Set(["DELIVERED", "FAILED", "CANCELED"]);

const FIELDS = ["def", "body", "next", "last", "paused", "states", "error"];

/** Schedules in the queue Redis; every change is one script, lua/schedule-*.lua. */
export class ScheduleStore {
  private readonly pool: QueueRedis;

  constructor(
    readonly parts: Partitions,
    private readonly maxSchedules = Number.MAX_SAFE_INTEGER,
  ) {
    this.pool = parts.main.redis;
  }

  /** Creates or replaces; a new schedule beyond `maxSchedules` is refused with 412. */
  async save(def: ScheduleDef, body: Buffer, next: number): Promise<void> {
    const id = def.scheduleId;
    const saved = await transitions.scheduleSave.run(
      this.pool,
      [K.schedule(id), K.schedules, K.scheduleDue],
      [id, JSON.stringify(def), body, String(next), String(this.maxSchedules)],
    );
    if (asInt(saved) === ScriptCode.tooManySchedules) {
      throw new AppError(
        "precondition_failed",
        `max number of schedules (${this.maxSchedules}) reached`,
      );
    }
  }

  /** Compare-and-set of the next tick; true when this call advanced it. */
  async advance(
    id: string,
    expectedNext: number,
    fire: {
      last: number;
      next: number;
      states: Record<string, string>;
      error?: string | undefined;
    },
  ): Promise<boolean> {
    const reply = await transitions.scheduleAdvance.run(
      this.pool,
      [K.schedule(id), K.scheduleDue],
      [
        id,
        String(expectedNext),
        String(fire.last),
        String(fire.next),
        JSON.stringify(fire.states),
        fire.error ?? "",
      ],
    );
    return asInt(reply) === ScriptCode.ok;
  }

  /** Pauses, or resumes with the given next tick; false when the schedule does not exist. */
  async setPaused(id: string, paused: boolean, next: number): Promise<boolean> {
    const reply = await transitions.schedulePause.run(
      this.pool,
      [K.schedule(id), K.scheduleDue],
      [id, paused ? "1" : "0", String(next)],
    );
    return asInt(reply) === ScriptCode.ok;
  }

  async delete(id: string): Promise<boolean> {
    const keys = [K.schedule(id), K.schedules, K.scheduleDue];
    const reply = await transitions.scheduleDelete.run(this.pool, keys, [id]);
    return asInt(reply) === ScriptCode.ok;
  }

  async get(id: string): Promise<StoredSchedule | undefined> {
    const reply = await this.pool.exec(["HMGET", K.schedule(id), ...FIELDS]);
    return parse(asArray(checked(reply, "schedule")));
  }

  /** Every schedule, oldest first. */
  async list(): Promise<StoredSchedule[]> {
    const ids = asArray(checked(await this.pool.exec(["SMEMBERS", K.schedules]), "schedules"));
    const list = await this.getMany(ids.map((id) => asText(id) ?? ""));
    return list.sort((a, b) => a.def.createdAt - b.def.createdAt);
  }

  /** Leases up to `limit` due schedules to this process (see scheduleClaim); their ids. */
  async claim(now: number, limit: number, leaseMs: number): Promise<string[]> {
    const args = [String(now), String(limit), String(leaseMs)];
    const reply = await transitions.scheduleClaim.run(this.pool, [K.scheduleDue], args);
    return asArray(reply).map((r) => asText(r) ?? "");
  }

  /** The stored schedules among `ids` (missing ones are skipped). */
  async getMany(ids: readonly string[]): Promise<StoredSchedule[]> {
    if (ids.length === 0) return [];
    const replies = await this.pool.execMany(ids.map((id) => ["HMGET", K.schedule(id), ...FIELDS]));
    return replies
      .map((r) => parse(asArray(checked(r, "schedules"))))
      .filter((s): s is StoredSchedule => s !== undefined);
  }

  /**
   * Final states (DELIVERED, FAILED, CANCELED) of finished messages among `ids`, from the newest
   * `scan` log events only: a bounded read, so a message finished long ago is not found.
   */
  async finalStates(ids: ReadonlySet<string>, scan = 500): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (ids.size === 0) return out;
    const reply = await this.pool.exec(["XREVRANGE", K.log, "+", "-", "COUNT", String(scan)]);
    for (const entry of asArray(checked(reply, "log"))) {
      const flat = asArray(asArray(entry)[1] ?? { kind: "nil", array: true });
      const id = asText(flat[1]) ?? "";
      const state = asText(flat[3]) ?? "";
      if (ids.has(id) && !out.has(id) && FINAL.has(state)) out.set(id, state);
    }
    return out;
  }

  /** The earliest next tick after `after` (exclusive) of any unpaused schedule. */
  async earliest(after: number): Promise<number | undefined> {
    const cmd = ["ZRANGE", K.scheduleDue, `(${after}`, "+inf", "BYSCORE", "LIMIT", "0", "1"];
    const reply = await this.pool.exec([...cmd, "WITHSCORES"]);
    const score = asArray(checked(reply, "scheduleDue"))[1];
    return score === undefined ? undefined : Number(asText(score));
  }
}

function parse(f: ReturnType<typeof asArray>): StoredSchedule | undefined {
  const def = asText(f[0]);
  if (def === undefined) return undefined;
  return {
    def: JSON.parse(def) as ScheduleDef,
    body: asBuffer(f[1]) ?? Buffer.alloc(0),
    next: Number(asText(f[2]) ?? 0),
    last: Number(asText(f[3]) ?? 0),
    paused: asText(f[4]) === "1",
    states: JSON.parse(asText(f[5]) || "{}") as Record<string, string>,
    error: asText(f[6]) ?? "",
  };
}
