import type { Config } from "../../config/schema.js";
import { halfOfMemory } from "../../shared/memory.js";
import type { DatabaseRecord } from "./registry.js";

/** What a managed database's redis-server is configured with from its record and the settings. */
export interface ManagedLimits {
  maxMemoryBytes: number;
  maxBulkBytes: number;
  evictionPolicy: "noeviction" | "allkeys-lru";
  /** `lua-time-limit` (busy-reply-threshold): Redis reads SCRIPT KILL only past it. */
  luaTimeLimitMs: number;
}

export function managedLimits(config: Config, record: DatabaseRecord): ManagedLimits {
  return {
    maxMemoryBytes: managedMaxMemory(config, record),
    maxBulkBytes: managedMaxBulk(config, record),
    evictionPolicy: managedEvictionPolicy(record),
    luaTimeLimitMs: record.scriptTimeLimitMs ?? config.kvScriptTimeLimitMs,
  };
}

/** Redis refuses a `proto-max-bulk-len` below 1 MiB. */
const MIN_BULK_BYTES = 1024 * 1024;

/**
 * The memory a managed database's redis-server may fill with data (its `maxmemory`): the
 * database's own `--max-data-size`, else STASHD_KV_MAX_DATA_BYTES, whose 0 means half of what
 * the machine has, or of the container's memory limit when that is lower (cgroup).
 */
export function managedMaxMemory(config: Config, record: DatabaseRecord): number {
  const chosen = record.maxDataBytes ?? config.kvMaxDataBytes;
  return chosen > 0 ? chosen : halfOfMemory();
}

/**
 * A managed database's `maxmemory-policy`. `noeviction` unless it was created with `--eviction`:
 * then `allkeys-lru`. Upstash's eviction samples keys at random, those with a TTL first, then any
 * (it calls this optimistic-volatile); Redis has no policy that falls back from TTL keys to the
 * others, and a cache is better served by dropping what was used least recently than at random.
 * Any key may go, stashd's own in the database included (a search index's definition, a hash's
 * field deadlines on Redis 7.0): docs/operations.md says so.
 */
export function managedEvictionPolicy(record: DatabaseRecord): "noeviction" | "allkeys-lru" {
  return record.eviction === true ? "allkeys-lru" : "noeviction";
}

/**
 * A managed database's `proto-max-bulk-len`: the max record size, so APPEND and scripts cannot
 * grow a string past it, but never below the largest argument a request may carry (a longer
 * argument than Redis accepts is a protocol error that closes a pooled connection).
 */
export function managedMaxBulk(config: Config, record: DatabaseRecord): number {
  const request = record.maxRequestBytes ?? config.kvMaxRequestBytes;
  return Math.max(config.kvMaxRecordBytes, request, MIN_BULK_BYTES);
}
