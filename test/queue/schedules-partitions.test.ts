import { rmSync } from "node:fs";
import { Client, type Schedule } from "@upstash/qstash";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { QueueService } from "../../src/queue/service.js";
import { ScheduleStore, type ScheduleDef } from "../../src/queue/store/schedule-store.js";
import { makePartitions, type Partitions } from "../../src/queue/store/partitions.js";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import { eventually } from "../harness/eventually.js";
import { startRedis, testPool, type TestRedis } from "../harness/redis.js";
import { startReceiver, type TestReceiver } from "./receiver.js";
import { queueEnv, startClockedQueue, TEST_TOKEN as TOKEN, TestClock, TEST_KEYS } from "./setup.js";

/**
 * Cron schedules on a queue split into 3 partitions on one Redis (docs/scaling.md, Queue
 * partitions): each schedule lives in its id's partition, two queue services ("processes")
 * sharing a test clock claim due schedules from every partition, the list merges them, and the
 * max-schedules limit counts them all.
 */
const MIN = 60_000;
const T0 = Date.UTC(2026, 0, 1, 0, 0, 30);

let redis: TestRedis;
let pool: RedisPool;
let parts: Partitions;
const clock = new TestClock(T0);
const dirs: string[] = [];
const services: QueueService[] = [];
let client: Client;
let rx: TestReceiver;

beforeAll(async () => {
  redis = await startRedis();
  for (let i = 0; i < 2; i++) {
    services.push(await startClockedQueue(redis.url, clock, dirs, { queuePartitions: 3 }));
  }
  client = new Client({ baseUrl: services[0]?.url ?? "", token: TOKEN });
  rx = await startReceiver(() => TEST_KEYS);
  pool = testPool(redis.url);
  parts = makePartitions(3, () => pool);
});
afterAll(async () => {
  await rx?.close();
  await Promise.all(services.map((s) => s.close()));
  await pool?.close();
  await redis?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Schedule ids `scd_<prefix><n>`, `perPartition` of them in each partition. */
function idsInEveryPartition(prefix: string, perPartition: number): string[] {
  const out: string[] = [];
  const count = new Map<number, number>();
  for (let n = 0; out.length < perPartition * parts.count; n++) {
    const id = `scd_${prefix}${n}`;
    const p = parts.ofName(id).index;
    if ((count.get(p) ?? 0) >= perPartition) continue;
    count.set(p, (count.get(p) ?? 0) + 1);
    out.push(id);
  }
  return out;
}

/** The partitions holding schedule `id`'s hash. */
async function partitionsOf(id: string): Promise<number[]> {
  const found: number[] = [];
  for (const p of parts.all) {
    const reply = await pool.exec(["EXISTS", p.keys.schedule(id)]);
    if (reply.kind === "int" && reply.value === "1") found.push(p.index);
  }
  return found;
}

describe("schedules over 3 queue partitions", () => {
  it("keeps each schedule in its id's partition, lists them all and fires every one", async () => {
    const ids = idsInEveryPartition("spread", 2);
    for (const scheduleId of ids) {
      clock.t += 1; // distinct createdAt: the list is sorted by it
      await client.schedules.create({
        scheduleId,
        destination: `${rx.url}/${scheduleId}`,
        cron: "* * * * *",
        body: scheduleId,
      });
    }
    for (const id of ids) expect(await partitionsOf(id)).toEqual([parts.ofName(id).index]);
    const listed = (await client.schedules.list()).map((s) => s.scheduleId);
    expect(listed).toEqual(ids);

    clock.t = Math.floor(clock.t / MIN) * MIN + MIN + 100;
    await eventually(() => expect(rx.requests.map((r) => r.body).sort()).toEqual([...ids].sort()));
    for (const id of ids) {
      await eventually(async () => {
        const s = (await client.schedules.get(id)) as Schedule & {
          lastScheduleStates: Record<string, string>;
        };
        expect(s.lastScheduleTime).toBeGreaterThan(0);
        expect(Object.values(s.lastScheduleStates)).toEqual(["SUCCESS"]);
      });
    }
    // Every tick fired exactly once, though two processes claim from every partition.
    await new Promise((r) => setTimeout(r, 200));
    expect(rx.requests).toHaveLength(ids.length);
    for (const id of ids) await client.schedules.delete(id);
    expect(await client.schedules.list()).toEqual([]);
  });

  it("counts the max-schedules limit over every partition", async () => {
    const env = await queueEnv({ queuePartitions: 3, queueMaxSchedules: 3 });
    try {
      const ids = idsInEveryPartition("limit", 1);
      const create = (scheduleId: string) =>
        env.client.schedules.create({ scheduleId, destination: rx.url, cron: "0 0 1 1 *" });
      for (const scheduleId of ids) await create(scheduleId);
      const [fourth] = idsInEveryPartition("over", 1);
      await expect(create(fourth ?? "")).rejects.toThrow(/max number of schedules \(3\)/);
      // A replacement is not a new schedule.
      await create(ids[0] ?? "");
      expect(await env.client.schedules.list()).toHaveLength(3);
    } finally {
      await env.close();
    }
  });

  it("claims an equal share of due schedules from each partition (none starves)", async () => {
    const own = await startRedis();
    const ownPool = testPool(own.url);
    try {
      const store = new ScheduleStore(makePartitions(3, () => ownPool));
      const def = (scheduleId: string): ScheduleDef => ({
        scheduleId,
        cron: "* * * * *",
        destination: "http://127.0.0.1:9/",
        options: { method: "POST", header: {}, maxRetries: 0, timeoutMs: 1000 },
        delayMs: 0,
        createdAt: T0,
      });
      // A backlog of 12 due in partition 0, one due in each of the others.
      const backlog = idsInEveryPartition("fair", 12).filter((id) => parts.ofName(id).index === 0);
      const single = idsInEveryPartition("one", 1).filter((id) => parts.ofName(id).index !== 0);
      for (const id of [...backlog, ...single]) await store.save(def(id), Buffer.from(""), T0);
      const first = await store.claim(T0, 6, MIN);
      expect(first.full).toBe(true);
      expect(first.ids.filter((id) => single.includes(id)).sort()).toEqual([...single].sort());
      expect(first.ids.filter((id) => backlog.includes(id))).toHaveLength(2);
    } finally {
      await ownPool.close();
      await own.stop();
    }
  });
});
