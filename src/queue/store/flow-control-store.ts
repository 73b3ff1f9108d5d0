import type { Partitions } from "./partitions.js";
import type { QueueRedis } from "./redis.js";
import type { Reply } from "../../shared/redis/resp.js";
import { queueKeys as K } from "./keys.js";
import { ScriptCode } from "./codes.js";
import { asArray, asInt, asText, checked } from "./replies.js";
import { transitions } from "./transitions.js";

/**
 * FlowControlInfo of docs/qstash-protocol.md §2.11; every field always present (JS reads the
 * numbers unguarded).
 */
export interface FlowControlInfo {
  flowControlKey: string;
  waitListSize: number;
  parallelismMax: number;
  parallelismCount: number;
  rateMax: number;
  rateCount: number;
  /** Seconds. */
  ratePeriod: number;
  /** Unix seconds. */
  ratePeriodStart: number;
  isPaused: boolean;
  isPinnedParallelism: boolean;
  isPinnedRate: boolean;
}

const NIL: Reply = { kind: "nil", array: false };
const FIELDS = [
  "parallelism",
  "rate",
  "period",
  "count",
  "rstart",
  "rcount",
  "createdAt",
  "paused",
  "pinP",
  "pinR",
] as const;

/**
 * A management action (docs/qstash-protocol.md §2.11) and its arguments (see
 * lua/flow-control-manage.lua).
 */
export type FlowControlAction =
  | { action: "pause" | "resume" | "resetRate" | "reset" }
  | {
      action: "pin";
      parallelism: number | undefined;
      rate: number | undefined;
      period: number | undefined;
    }
  | { action: "unpin"; parallelism: boolean; rate: boolean };

/**
 * Reads of flow-control keys (the state is written only by the Lua helpers of
 * lua/includes/fc-*.lua). A key exists once a message with it was stored.
 */
export class FlowControlStore {
  private readonly pool: QueueRedis;

  constructor(readonly parts: Partitions) {
    this.pool = parts.main.redis;
  }

  async get(key: string, now: number): Promise<FlowControlInfo | undefined> {
    return (await this.getMany([key], now))[0];
  }

  /** Applies `a` to `key`; the number of messages admitted, undefined when the key is missing. */
  async manage(key: string, now: number, a: FlowControlAction): Promise<number | undefined> {
    const args = [K.prefix, String(now), key, a.action];
    if (a.action === "pin") args.push(...[a.parallelism, a.rate, a.period].map((v) => str(v)));
    if (a.action === "unpin") args.push(a.parallelism ? "1" : "0", a.rate ? "1" : "0");
    const keys = [K.flowControl(key), K.due];
    const n = asInt(await transitions.flowControlManage.run(this.pool, keys, args));
    return n === ScriptCode.flowControlKeyMissing ? undefined : n;
  }

  /** In-flight deliveries across every process (the active set). */
  async activeCount(): Promise<number> {
    return asInt(checked(await this.pool.exec(["ZCARD", K.active]), "flow control"));
  }

  /** Every key containing `search` (all without), by key. */
  async list(now: number, search?: string): Promise<FlowControlInfo[]> {
    const reply = checked(await this.pool.exec(["SMEMBERS", K.flowControlKeys]), "flow control");
    const keys = asArray(reply).map((k) => asText(k) ?? "");
    const wanted = keys.filter((k) => !search || k.includes(search)).sort();
    return this.getMany(wanted, now);
  }

  private async getMany(keys: readonly string[], now: number): Promise<FlowControlInfo[]> {
    if (keys.length === 0) return [];
    const replies = await this.pool.execMany(
      keys.flatMap((k) => [
        ["HMGET", K.flowControl(k), ...FIELDS],
        ["LLEN", K.flowControlWait(k)],
      ]),
    );
    const out: FlowControlInfo[] = [];
    for (const [i, key] of keys.entries()) {
      const fields = asArray(checked(replies[i * 2] ?? NIL, "flow control")).map(asText);
      if (fields[6] === undefined) continue;
      const waiting = asInt(checked(replies[i * 2 + 1] ?? NIL, "flow control"));
      const state = { paused: fields[7] === "1", pinP: fields[8] === "1", pinR: fields[9] === "1" };
      out.push(
        info(
          key,
          fields.map((f) => Number(f ?? 0)),
          waiting,
          now,
          state,
        ),
      );
    }
    return out;
  }
}

/** Builds the API object from the hash fields (FIELDS order); a period that ended counts 0. */
function info(
  key: string,
  f: number[],
  waiting: number,
  now: number,
  s: { paused: boolean; pinP: boolean; pinR: boolean },
): FlowControlInfo {
  const [parallelism = 0, rate = 0, period = 1, count = 0, rstart = 0, rcount = 0] = f;
  const current = now < rstart + period * 1000;
  return {
    flowControlKey: key,
    waitListSize: waiting,
    parallelismMax: parallelism,
    parallelismCount: count,
    rateMax: rate,
    rateCount: current ? rcount : 0,
    ratePeriod: period,
    ratePeriodStart: Math.floor((current ? rstart : now) / 1000),
    isPaused: s.paused,
    isPinnedParallelism: s.pinP,
    isPinnedRate: s.pinR,
  };
}

const str = (v: number | undefined): string => (v === undefined ? "" : String(v));
