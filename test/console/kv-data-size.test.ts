import { afterAll, beforeAll, expect, test } from "vitest";
import { FULL_AT } from "../../console/src/data-level.js";
import { createDatabase } from "../../src/kv/databases/registry.js";
import { eventually } from "../harness/eventually.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { consoleCookie, consoleEnv, type ConsoleEnv } from "./harness.js";
import { fillUntilFull } from "./kv-helpers.js";

/**
 * The console's data size of each database (the summary's `data`, which the KV page and the side
 * bar show): a managed database's Redis memory against its max data size, which it reaches when
 * writes are refused; an external Redis without maxmemory has no limit; one that does not answer
 * is "unknown" with Redis's reason, and the summary still answers.
 */
const MIB = 1024 * 1024;
let env: ConsoleEnv;
let cookie: string;
let unlimited: TestRedis;
let gone: TestRedis;

interface Entry {
  name: string;
  keys: number | null;
  data: { used: number; limit: number | null } | { unknown: string };
}

beforeAll(async () => {
  env = await consoleEnv({ browser: false, start: { kvMaxDataBytes: 8 * MIB } });
  cookie = await consoleCookie(env);
  [unlimited, gone] = await Promise.all([startRedis(), startRedis()]);
  createDatabase(env.q.stashd.dataDir, "unlimited", { redisUrl: `${unlimited.url}/3` });
  createDatabase(env.q.stashd.dataDir, "gone", { redisUrl: `${gone.url}/3` });
});
afterAll(async () => {
  await env?.close();
  await Promise.all([unlimited?.stop(), gone?.stop()]);
});

async function databases(): Promise<Entry[]> {
  const res = await fetch(`${env.url}/api/summary`, { headers: { cookie } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { databases: Entry[] }).databases;
}

async function entry(name: string): Promise<Entry> {
  const found = (await databases()).find((d) => d.name === name);
  if (!found) throw new Error(`no ${name} in the summary yet`);
  return found;
}

test("a managed database reports its memory against its max data size, at or past it once writes are refused", async () => {
  const before = await entry("default");
  expect(before.data).toEqual({ used: expect.any(Number), limit: 8 * MIB });
  const { used } = before.data as { used: number };
  expect(used).toBeGreaterThan(0);
  expect(used).toBeLessThan(8 * MIB);

  // Redis counts buffers besides the data, freed once the write is refused: the data rests just
  // under the limit, which the console counts as full (FULL_AT).
  const usedOf = async () => (await entry("default")).data as { used: number };
  const full = await fillUntilFull(env, async () => (await usedOf()).used >= FULL_AT * 8 * MIB);
  expect(full.error).toMatch(/^ERR DB capacity quota exceeded/);
  const after = await entry("default");
  expect(after.data).toEqual({ used: expect.any(Number), limit: 8 * MIB });
  expect((after.data as { used: number }).used).toBeGreaterThanOrEqual(FULL_AT * 8 * MIB);
  expect(after.keys).toBe(full.keys);
});

test("an external Redis without maxmemory reports its size and no limit; one down is unknown", async () => {
  await eventually(async () => {
    const unlimitedDb = await entry("unlimited");
    expect(unlimitedDb.data).toEqual({ used: expect.any(Number), limit: null });
    expect((unlimitedDb.data as { used: number }).used).toBeGreaterThan(0);
    await entry("gone");
  });
  await gone.stop();
  await eventually(async () => {
    const goneDb = await entry("gone");
    expect(goneDb.keys).toBeNull();
    expect(goneDb.data).toEqual({ unknown: expect.stringMatching(/\S/) });
    // The other databases' sizes still come.
    expect((await entry("default")).data).toMatchObject({ limit: 8 * MIB });
  });
});

test("a database created with --eviction is reported as evicting at its limit, not as filling up", async () => {
  createDatabase(env.q.stashd.dataDir, "cache", { maxDataBytes: 4 * MIB, eviction: true });
  await eventually(async () =>
    expect((await entry("cache")).data).toEqual({
      used: expect.any(Number),
      limit: 4 * MIB,
      evicts: true,
    }),
  );
  expect((await entry("default")).data).not.toHaveProperty("evicts");
});
