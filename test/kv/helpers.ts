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

/** A number field of `INFO <section>` (`used_memory`, `used_memory_scripts_eval`…), as the token sees it. */
export async function infoNumber(s: TestStashd, section: string, field: string): Promise<number> {
  const { body } = await command(s, ["INFO", section]);
  const text = String((body as { result?: unknown }).result);
  return Number(new RegExp(`^${field}:(\\d+)`, "m").exec(text)?.[1]);
}

/** `command` with the reply as [status, body]; `token` null sends none. */
export async function statusAndBody(
  s: TestStashd,
  argv: unknown[],
  token?: string | null,
): Promise<[number, { result?: unknown; error?: string }]> {
  const { status, body } = await command(s, argv, token === undefined ? {} : { token });
  return [status, body as { result?: unknown; error?: string }];
}
