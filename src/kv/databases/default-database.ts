import type { Config } from "../../config/schema.js";
import { createDatabase, readRegistry } from "./registry.js";

/**
 * The `default` database exists whenever stashd runs: it is created at the first start, and again
 * at a start after `stashd db delete default --force` (then empty, with new tokens). SDK setups
 * and `stashd credentials` name it, so it is never silently replaced by another database.
 * External when STASHD_KV_REDIS_URL is set at the time it is created.
 */
export function ensureDefaultDatabase(config: Config): void {
  if (readRegistry(config.dataDir).some((r) => r.name === "default")) return;
  createDatabase(
    config.dataDir,
    "default",
    config.kvRedisUrl ? { redisUrl: config.kvRedisUrl } : {},
  );
}
