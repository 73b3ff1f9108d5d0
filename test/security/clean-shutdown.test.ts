import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/queue/scheduler/scheduler.js";
import { createLogger } from "../../src/shared/log.js";
import { eventually } from "../harness/eventually.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { startReceiver, type TestReceiver } from "../queue/receiver.js";
import { startClockedQueue } from "../queue/setup.js";

/**
 * Issue 25, hole 12: a clean stop logged `warn dispatcher pump failed` (a claim still waiting on
 * Redis when the connections closed; the lease reaper and the DLQ retention had the same race).
 * A stop right after publishes, while the dispatcher claims and reaps and the scheduler polls,
 * logs no warning or error.
 */
let redis: TestRedis;
let rx: TestReceiver;
const dirs: string[] = [];
beforeAll(async () => {
  redis = await startRedis();
  rx = await startReceiver(() => ({ current: "", next: "" }));
});
afterAll(async () => {
  await rx.close();
  await redis.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("a clean stop of the queue", () => {
  it("logs no warning while deliveries, claims, reaps and polls are under way", async () => {
    const lines: string[] = [];
    const log = createLogger("warn", "test", { format: "json", write: (l) => lines.push(l) });
    // Background loops run every millisecond or two, so some stop lands while a claim, a reap
    // or a poll waits for Redis (before the fix, about one run in two logged a warning).
    for (let round = 0; round < 60; round++) {
      const fast = {
        queueIdlePollMs: 1,
        queueReapMs: 2,
        queueSchedulePollMs: 1,
        queueStoreCheckMs: 3,
        queueDlqRetentionMs: 20,
      };
      const queue = await startClockedQueue(redis.url, systemClock, dirs, fast, log);
      const publish = (i: number) =>
        fetch(`${queue.url}/v2/publish/${rx.url}/stop-${round}-${i}`, {
          method: "POST",
          headers: { authorization: `Bearer ${queue.token}`, "upstash-delay": `${i % 2}s` },
          body: "x",
        });
      if (round % 4 === 0) {
        const answers = await Promise.all([...Array(6).keys()].map(publish));
        expect(answers.map((a) => a.status)).toEqual(Array(6).fill(201));
        const seen = rx.requests.length;
        await eventually(() => expect(rx.requests.length).toBeGreaterThan(seen));
      }
      await new Promise((r) => setTimeout(r, 5 + (round % 10)));
      await queue.close();
    }
    const noisy = lines.filter((l) => /"level":"(warn|error)"/.test(l));
    expect(noisy.filter((l) => !l.includes("STASHD_QUEUE_ALLOW_UNSAFE_REDIS"))).toEqual([]);
  });
});
