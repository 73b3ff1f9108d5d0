import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.js";
import { parseCron } from "../../src/queue/scheduler/cron.js";
import { fireSchedule, type FireDeps } from "../../src/queue/scheduler/fire.js";
import { MessageStore } from "../../src/queue/store/message-store.js";
import { QueueStore } from "../../src/queue/store/queue-store.js";
import { ScheduleStore, type ScheduleDef } from "../../src/queue/store/schedule-store.js";
import { TopicStore } from "../../src/queue/store/topic-store.js";
import { parseRedisUrl } from "../../src/shared/redis/connection.js";
import { RedisPool } from "../../src/shared/redis/pool.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { singlePartition } from "../../src/queue/store/partitions.js";

/**
 * The fire transition against a real Redis, without schedulers or HTTP: many concurrent fires of
 * one tick (as many processes would) store its messages once and advance it once; a fire that
 * died after storing is completed without storing again.
 */
const MIN = 60_000;
const TICK = Date.UTC(2026, 0, 1, 0, 1);
/** The wall clock minus a scheduler clock reading `now` (the scheduler's clock is moved here). */
const offsetAt = (now: number): number => Date.now() - now;

let redis: TestRedis;
let pool: RedisPool;
let deps: FireDeps;

beforeAll(async () => {
  redis = await startRedis();
  pool = new RedisPool(parseRedisUrl(redis.url), {
    size: 4,
    connectTimeoutMs: 2000,
    retryBackoffMs: 20,
  });
  deps = {
    schedules: new ScheduleStore(singlePartition(pool)),
    messages: new MessageStore(singlePartition(pool), MIN),
    queues: new QueueStore(singlePartition(pool), MIN, 1000),
    topics: new TopicStore(singlePartition(pool), 1000),
    config: loadConfig({}, {}),
    claimMs: MIN,
  };
});
afterAll(async () => {
  await pool?.close();
  await redis?.stop();
});

function def(id: string): ScheduleDef {
  return {
    scheduleId: id,
    cron: "* * * * *",
    destination: "http://127.0.0.1:9/never",
    options: { method: "POST", header: {}, maxRetries: 0, timeoutMs: 1000 },
    delayMs: 3_600_000, // keep the messages waiting: nothing here delivers them
    createdAt: TICK - 30_000,
  };
}

async function pendingOf(id: string): Promise<string[]> {
  const stored = await deps.messages.getMany(await deps.messages.pendingIds());
  return stored.filter((m) => m.meta.scheduleId === id).map((m) => m.meta.messageId);
}

describe("schedule fire", () => {
  it("of 20 concurrent fires of one tick, one stores and one advances", async () => {
    await deps.schedules.save(def("race"), Buffer.from("b"), TICK);
    const s = await deps.schedules.get("race");
    if (!s) throw new Error("not saved");
    const results = await Promise.all(
      Array.from({ length: 20 }, () => fireSchedule(deps, s, TICK + 5, offsetAt(TICK + 5))),
    );
    expect(results.filter((r) => r.advanced)).toHaveLength(1);
    expect(results.filter((r) => r.dueAt !== undefined)).toHaveLength(1);
    const pending = await pendingOf("race");
    expect(pending).toHaveLength(1);
    const after = await deps.schedules.get("race");
    expect(after).toMatchObject({ last: TICK, next: TICK + MIN });
    expect(Object.keys(after?.states ?? {})).toEqual(pending);
    expect(await deps.schedules.earliest(0)).toBe(TICK + MIN);
  });

  it("completes a fire that stored its messages but died before advancing", async () => {
    await deps.schedules.save(def("crash"), Buffer.alloc(0), TICK);
    const s = await deps.schedules.get("crash");
    if (!s) throw new Error("not saved");
    // The first attempt: same stores, but the advance is lost (the schedule stays due).
    const first = await fireSchedule(
      {
        ...deps,
        schedules: Object.assign(new ScheduleStore(singlePartition(pool)), {
          advance: async () => false,
        }),
      },
      s,
      TICK + 5,
      offsetAt(TICK + 5),
    );
    expect(first).toMatchObject({ advanced: false });
    expect(await deps.schedules.earliest(TICK - 1)).toBe(TICK); // still due
    const again = await fireSchedule(deps, s, TICK + 9, offsetAt(TICK + 9));
    expect(again).toEqual({ advanced: true, dueAt: undefined });
    expect(await pendingOf("crash")).toHaveLength(1);
  });

  it("catches up once: the latest missed tick, then the first tick after now", async () => {
    await deps.schedules.save(def("late"), Buffer.alloc(0), TICK);
    const s = await deps.schedules.get("late");
    if (!s) throw new Error("not saved");
    const now = TICK + 42 * MIN + 1234;
    await fireSchedule(deps, s, now, offsetAt(now));
    expect(await deps.schedules.get("late")).toMatchObject({
      last: TICK + 42 * MIN,
      next: TICK + 43 * MIN,
    });
    expect(await pendingOf("late")).toHaveLength(1);
    expect(parseCron("* * * * *").latest(now)).toBe(TICK + 42 * MIN);
  });

  it("does not advance a replaced, paused or deleted schedule's old tick", async () => {
    await deps.schedules.save(def("gone"), Buffer.alloc(0), TICK);
    const s = await deps.schedules.get("gone");
    if (!s) throw new Error("not saved");
    await deps.schedules.save(def("gone"), Buffer.alloc(0), TICK + 2 * MIN); // replaced
    expect((await fireSchedule(deps, s, TICK + 5, offsetAt(TICK + 5))).advanced).toBe(false);
    expect((await deps.schedules.get("gone"))?.next).toBe(TICK + 2 * MIN);
    await deps.schedules.delete("gone");
    expect((await fireSchedule(deps, s, TICK + 5, offsetAt(TICK + 5))).advanced).toBe(false);
    expect(await deps.schedules.get("gone")).toBeUndefined();
  });

  it("stores a tick fired ahead due at the tick itself, however late the fire ran", async () => {
    // The scheduler reads its clock (the wall clock, as outside tests) a second before a tick.
    const readAt = Date.now();
    const tick = readAt + 1000;
    await deps.schedules.save({ ...def("ahead"), delayMs: 0 }, Buffer.alloc(0), tick);
    const s = await deps.schedules.get("ahead");
    if (!s) throw new Error("not saved");
    // Claims and reads take their time before the fire stores the messages: they are due at the
    // tick, not a second after whenever they happened to be stored. (Nothing here delivers them.)
    await new Promise((r) => setTimeout(r, 50));
    const result = await fireSchedule(deps, s, readAt, 0);
    expect(result.dueAt).toBe(tick);
    const [id] = await pendingOf("ahead");
    const [stored] = await deps.messages.getMany([id ?? ""]);
    expect(stored?.meta.notBefore).toBe(tick);
  });
});
