import { onEachMaster, type RedisBackend } from "../../shared/redis/backend.js";
import { textOf } from "../../shared/redis/cluster/commands.js";
import type { Reply } from "../../shared/redis/resp.js";

/**
 * How much memory a database's data takes and how much it may take (the console's "Data 12.3 MiB
 * of 8.0 GiB"): Redis's `used_memory` against its `maxmemory`, past which a managed database
 * refuses writes (docs/operations.md, Managed Redis). Summed over the masters of a cluster.
 */
export interface DataSize {
  /** `used_memory`, bytes. */
  used: number;
  /** `maxmemory`, bytes; null when a master has none set (0: Redis takes what the machine has). */
  limit: number | null;
  /**
   * Set (true) when Redis evicts keys at the limit instead of refusing writes (a `maxmemory-policy`
   * other than `noeviction`: `db create --eviction`); absent otherwise.
   */
  evicts?: true;
}

/** A database's data size, or why it is not known (Redis down, INFO refused to stashd's user). */
export type DataSizeAnswer = DataSize | { unknown: string };

/**
 * Reads `INFO memory` on every master through `admin` (stashd's own connection, so the reads are
 * not counted as the database's commands). Rejects when a master does not answer or refuses.
 */
export async function readDataSize(admin: RedisBackend): Promise<DataSize> {
  const replies = await onEachMaster(admin, ["INFO", "memory"]);
  const each = replies.map(memoryOf);
  const limits = each.map((m) => m.limit);
  return {
    used: each.reduce((sum, m) => sum + m.used, 0),
    limit: limits.every((l) => l > 0) ? limits.reduce((sum, l) => sum + l, 0) : null,
    ...(each.some((m) => m.evicts) ? { evicts: true as const } : {}),
  };
}

/** One master's `used_memory`, `maxmemory` (0 when unset) and eviction from INFO memory. */
function memoryOf(reply: Reply): { used: number; limit: number; evicts: boolean } {
  if (reply.kind === "error") throw new Error(reply.value);
  const text = textOf(reply);
  if (text === undefined) throw new Error(`INFO memory answered ${reply.kind}`);
  const policy = /^maxmemory_policy:(\S+)\r?$/m.exec(text)?.[1] ?? "noeviction";
  return {
    used: infoNumber(text, "used_memory"),
    limit: infoNumber(text, "maxmemory"),
    evicts: policy !== "noeviction",
  };
}

/** The integer field `name` of an INFO section (`name:value` lines). */
function infoNumber(info: string, name: string): number {
  const match = new RegExp(`^${name}:(\\d+)\\r?$`, "m").exec(info);
  if (!match) throw new Error(`INFO memory has no ${name}`);
  return Number(match[1]);
}
