import { afterAll, beforeAll } from "vitest";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import { startRedis, testPool, type TestRedis } from "./redis.js";

/**
 * A real redis-server and a pool of `size` connections to it for one test file: started in
 * beforeAll, closed and stopped in afterAll. Call at the top level of the file.
 */
export function useRedisPool(size = 1): { redis: () => TestRedis; pool: () => RedisPool } {
  let redis: TestRedis | undefined;
  let pool: RedisPool | undefined;
  beforeAll(async () => {
    redis = await startRedis();
    pool = testPool(redis.url, size);
  });
  afterAll(async () => {
    await pool?.close();
    await redis?.stop();
  });
  return { redis: () => redis as TestRedis, pool: () => pool as RedisPool };
}
