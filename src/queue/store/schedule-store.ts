import type { Reply } from "../../shared/redis/resp.js";
import type { Partition, Partitions } from "./partitions.js";
import { AppError } from "../../shared/errors.js";
import { TimeSlice } from "../../shared/time-slice.js";
import type { PublishOptions } from "../domain/publish-options.js";
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

/** What `ScheduleStore.claim` leased: the ids, and whether some partition may have more due. */
export interface Claimed {
  ids: string[];
  full: boolean;
}

/**
 * Schedules in the queue Redis; every change is one script, lua/schedule-*.lua. A schedule
 * lives in the partition of its id (`Partitions.ofName`, docs/scaling.md, Queue partitions);
 * listings, claims and the earliest tick read every partition.
 */
export class ScheduleStore {
  constructor(
    readonly parts: Partitions,
    private readonly maxSchedules = Number.MAX_SAFE_INTEGER,
  ) {}

  private of(id: string): Partition {
    return this.parts.ofName(id);
  }

  /**
   * Creates or replaces; a new schedule beyond `maxSchedules` is refused with 412. The limit
   * counts every partition: the schedule's own one checks, in its script, against what is left
   * after the others' counts read just before, so concurrent creates in different partitions
   * can pass the limit by a few (the same partition's never do).
   */
  async save(def: ScheduleDef, body: Buffer, next: number): Promise<void> {
    const id = def.scheduleId;
    const { redis, keys: K } = this.of(id);
    const room = this.maxSchedules - (await this.countOutside(this.of(id)));
    const saved = await transitions.scheduleSave.run(
      redis,
      [K.schedule(id), K.schedules, K.scheduleDue],
      [id, JSON.stringify(def), body, String(next), String(Math.max(0, room))],
    );
    if (saved === ScriptCode.tooManySchedules) {
      throw new AppError(
        "precondition_failed",
        `max number of schedules (${this.maxSchedules}) reached`,
      );
    }
  }

  /** How many schedules the partitions other than `p` hold (0 without a limit to check). */
  private async countOutside(p: Partition): Promise<number> {
    if (this.maxSchedules === Number.MAX_SAFE_INTEGER || this.parts.count === 1) return 0;
    const counts = await this.parts.each(async (q) =>
      q === p ? 0 : asInt(checked(await q.redis.exec(["SCARD", q.keys.schedules]), "schedules")),
    );
    return counts.reduce((a, b) => a + b, 0);
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
    const { redis, keys: K } = this.of(id);
    return transitions.scheduleAdvance.run(
      redis,
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
  }

  /** Pauses, or resumes with the given next tick; false when the schedule does not exist. */
  async setPaused(id: string, paused: boolean, next: number): Promise<boolean> {
    const { redis, keys: K } = this.of(id);
    return transitions.schedulePause.run(
      redis,
      [K.schedule(id), K.scheduleDue],
      [id, paused ? "1" : "0", String(next)],
    );
  }

  async delete(id: string): Promise<boolean> {
    const { redis, keys: K } = this.of(id);
    const keys = [K.schedule(id), K.schedules, K.scheduleDue];
    return transitions.scheduleDelete.run(redis, keys, [id]);
  }

  async get(id: string): Promise<StoredSchedule | undefined> {
    const { redis, keys: K } = this.of(id);
    const reply = await redis.exec(["HMGET", K.schedule(id), ...FIELDS]);
    return parse(asArray(checked(reply, "schedule")));
  }

  /** Every schedule of every partition, oldest first. */
  async list(): Promise<StoredSchedule[]> {
    const each = await this.parts.each(async ({ redis, keys }) => {
      const ids = asArray(checked(await redis.exec(["SMEMBERS", keys.schedules]), "schedules"));
      return this.getMany(ids.map((id) => asText(id) ?? ""));
    });
    return each.flat().sort((a, b) => a.def.createdAt - b.def.createdAt);
  }

  /**
   * Leases up to `limit` due schedules to this process (see scheduleClaim), an equal share from
   * each partition, so that one partition's backlog never keeps another's due schedules
   * waiting; `full` when some partition gave its whole share (more may be due there).
   */
  async claim(now: number, limit: number, leaseMs: number): Promise<Claimed> {
    const share = Math.max(1, Math.ceil(limit / this.parts.count));
    const args = [String(now), String(share), String(leaseMs)];
    const each = await this.parts.each(async ({ redis, keys }) => {
      return transitions.scheduleClaim.run(redis, [keys.scheduleDue], args);
    });
    return { ids: each.flat(), full: each.some((ids) => ids.length === share) };
  }

  /** The stored schedules among `ids` (missing ones are skipped), partition by partition. */
  async getMany(ids: readonly string[]): Promise<StoredSchedule[]> {
    if (ids.length === 0) return [];
    const each = await this.parts.each(async (p) => {
      const own = ids.filter((id) => this.of(id) === p);
      if (own.length === 0) return [];
      return p.redis.execMany(own.map((id) => ["HMGET", p.keys.schedule(id), ...FIELDS]));
    });
    // 10,000 schedules take tens of milliseconds to parse: other requests get turns meanwhile.
    const out: StoredSchedule[] = [];
    const slice = new TimeSlice();
    for (const r of each.flat()) {
      await slice.pass();
      const s = parse(asArray(checked(r, "schedules")));
      if (s !== undefined) out.push(s);
    }
    return out;
  }

  /**
   * Final states (DELIVERED, FAILED, CANCELED) of finished messages among `ids`. Each message's
   * last event is read through its log index (`<p>msglog:<id>`: LINDEX -1, then that one
   * stream entry), so a fire that finished long ago is found however many events came since.
   * Ids with no index key (stored before the index existed) are looked for among the newest
   * `scan` log events of each partition, as before the index. Every partition is asked (a fire's
   * messages are placed by their queue, flow-control or dedup key, not by the schedule).
   */
  async finalStates(ids: ReadonlySet<string>, scan = 500): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (ids.size === 0) return out;
    const wanted = [...ids];
    const indexed = new Set<string>();
    await this.parts.each(async (p) => {
      for (const [id, state] of await lastIndexedStates(p, wanted)) {
        indexed.add(id);
        if (FINAL.has(state)) out.set(id, state);
      }
    });
    const rest = new Set(wanted.filter((id) => !indexed.has(id)));
    if (rest.size > 0)
      for (const [id, state] of await this.scanFinal(rest, scan)) out.set(id, state);
    return out;
  }

  /** finalStates among the newest `scan` events of each partition's log (no index read). */
  private async scanFinal(ids: ReadonlySet<string>, scan: number): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    const logs = await this.parts.each(async ({ redis, keys }) => {
      const reply = await redis.exec(["XREVRANGE", keys.log, "+", "-", "COUNT", String(scan)]);
      return asArray(checked(reply, "log"));
    });
    for (const entry of logs.flat()) {
      const [id, state] = idAndState(entry);
      if (ids.has(id) && !out.has(id) && FINAL.has(state)) out.set(id, state);
    }
    return out;
  }

  /** The earliest next tick after `after` (exclusive) of any unpaused schedule. */
  async earliest(after: number): Promise<number | undefined> {
    const cmd = ["ZRANGE", "", `(${after}`, "+inf", "BYSCORE", "LIMIT", "0", "1", "WITHSCORES"];
    const each = await this.parts.each(async ({ redis, keys }) => {
      const reply = await redis.exec(cmd.map((a, i) => (i === 1 ? keys.scheduleDue : a)));
      const score = asArray(checked(reply, "scheduleDue"))[1];
      return score === undefined ? Infinity : Number(asText(score));
    });
    const min = Math.min(...each);
    return min === Infinity ? undefined : min;
  }
}

/** A log entry's message id and state (its fields are messageId, state, ... in that order). */
function idAndState(entry: Reply): [string, string] {
  const flat = asArray(asArray(entry)[1] ?? { kind: "nil", array: true });
  return [asText(flat[1]) ?? "", asText(flat[3]) ?? ""];
}

/**
 * The state of the last event of each of `ids` that has a log index in partition `p`: the
 * index's last stream id (LINDEX -1), then that entry, two pipelined rounds for all of them.
 */
async function lastIndexedStates(p: Partition, ids: string[]): Promise<Map<string, string>> {
  const lasts = await p.redis.execMany(ids.map((id) => ["LINDEX", p.keys.messageLog(id), "-1"]));
  const found = ids.flatMap((id, i): [string, string][] => {
    const streamId = asText(checked(lasts[i] as Reply, "log index"));
    return streamId ? [[id, streamId]] : [];
  });
  const out = new Map<string, string>();
  if (found.length === 0) return out;
  const entries = await p.redis.execMany(found.map(([, sid]) => ["XRANGE", p.keys.log, sid, sid]));
  entries.forEach((reply, i) => {
    const [entry] = asArray(checked(reply, "log"));
    const id = found[i]?.[0];
    if (entry && id !== undefined) out.set(id, idAndState(entry)[1]);
  });
  return out;
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
