import type { Reply } from "../../shared/redis/resp.js";
import type { Partition, Partitions } from "./partitions.js";
import { groupBy } from "./spread.js";
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
 * lua/includes/fc-*.lua). A key exists once a message with it was stored. A key lives in the
 * partition of its name (Partitions.ofName), with its messages; lists merge every partition's.
 */
export class FlowControlStore {
  constructor(readonly parts: Partitions) {}

  async get(key: string, now: number): Promise<FlowControlInfo | undefined> {
    return (await this.getMany([key], now))[0];
  }

  /** Applies `a` to `key`; the number of messages admitted, undefined when the key is missing. */
  async manage(key: string, now: number, a: FlowControlAction): Promise<number | undefined> {
    const p = this.parts.ofName(key);
    const args = [p.keys.prefix, String(now), key, a.action];
    if (a.action === "pin") args.push(...[a.parallelism, a.rate, a.period].map((v) => str(v)));
    if (a.action === "unpin") args.push(a.parallelism ? "1" : "0", a.rate ? "1" : "0");
    const keys = [p.keys.flowControl(key), p.keys.due];
    const n = await transitions.flowControlManage.run(p.redis, keys, args);
    return n === ScriptCode.flowControlKeyMissing ? undefined : n;
  }

  /** In-flight deliveries across every process (the active sets of every partition). */
  async activeCount(): Promise<number> {
    const counts = await this.parts.each(async (p) =>
      asInt(checked(await p.redis.exec(["ZCARD", p.keys.active]), "flow control")),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  /** Every key containing `search` (all without), by key. */
  async list(now: number, search?: string): Promise<FlowControlInfo[]> {
    const keys = await this.parts.each(async (p) => {
      const reply = await p.redis.exec(["SMEMBERS", p.keys.flowControlKeys]);
      return asArray(checked(reply, "flow control")).map((k) => asText(k) ?? "");
    });
    const wanted = keys.flat().filter((k) => !search || k.includes(search));
    return this.getMany(wanted.sort(), now);
  }

  /** The existing keys among `keys`, in order. */
  private async getMany(keys: readonly string[], now: number): Promise<FlowControlInfo[]> {
    const groups = groupBy(keys, (k) => this.parts.ofName(k));
    const found = new Map<string, FlowControlInfo>();
    await Promise.all(
      [...groups].map(async ([p, group]) => {
        for (const f of await readKeys(p, group, now)) found.set(f.flowControlKey, f);
      }),
    );
    return keys.flatMap((k) => found.get(k) ?? []);
  }
}

/** The existing keys among `keys`, all of partition `p`. */
async function readKeys(p: Partition, keys: readonly string[], now: number) {
  const replies = await p.redis.execMany(
    keys.flatMap((k) => [
      ["HMGET", p.keys.flowControl(k), ...FIELDS],
      ["LLEN", p.keys.flowControlWait(k)],
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
