import { afterAll, beforeAll } from "vitest";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import type { StartOptions } from "../../src/index.js";

/**
 * A real redis-server (started with `redisArgs`) and a stashd fronting it, for one test file.
 * Only the KV gateway runs (no queue Redis or listener) unless `options.services` says otherwise.
 */
export function useGateway(
  options: StartOptions = {},
  redisArgs: string[] = [],
): {
  redis: () => TestRedis;
  stashd: () => TestStashd;
} {
  let redis: TestRedis | undefined;
  let stashd: TestStashd | undefined;
  beforeAll(async () => {
    redis = await startRedis(redisArgs);
    stashd = await startStashd({ kvRedisUrl: redis.url, services: ["kv"], ...options });
  });
  afterAll(async () => {
    await stashd?.stop();
    await redis?.stop();
  });
  return {
    redis: () => redis as TestRedis,
    stashd: () => stashd as TestStashd,
  };
}

export async function bodyOf(res: Response): Promise<unknown> {
  return JSON.parse(await res.text()) as unknown;
}

/** Sends a JSON-array command to `/` and returns status and parsed body. */
export async function command(
  s: TestStashd,
  argv: unknown[],
  init: RequestInit & { token?: string | null } = {},
): Promise<{ status: number; body: unknown }> {
  const res = await s.kvFetch("/", { body: JSON.stringify(argv), ...init });
  return { status: res.status, body: await bodyOf(res) };
}
