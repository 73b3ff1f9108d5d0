import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { startReceiver, type TestReceiver } from "../queue/receiver.js";
import { FAST_QUEUE } from "../queue/setup.js";

/**
 * Graceful stop: STASHD_SHUTDOWN_GRACE_MS bounds it; an attempt whose response arrived is
 * recorded before the queue Redis connection closes; one cut off is redelivered later and does
 * not use up a retry.
 */
const GRACE_MS = 400;
let redis: TestRedis;
let rx: TestReceiver;
let keys = { current: "", next: "" };

beforeAll(async () => {
  redis = await startRedis();
  rx = await startReceiver(() => keys);
});
afterAll(async () => {
  await rx.close();
  await redis.stop();
});

async function stashdOn(dataDir?: string): Promise<TestStashd> {
  const s = await startStashd({
    queueRedisUrl: redis.url,
    ...FAST_QUEUE,
    queueLeaseMs: 1_000,
    shutdownGraceMs: GRACE_MS,
    ...(dataDir ? { dataDir } : {}),
  });
  keys = { current: s.queue.currentSigningKey, next: s.queue.nextSigningKey };
  return s;
}

async function publish(s: TestStashd, path: string, retries: number): Promise<string> {
  const res = await fetch(`${s.queue.url}/v2/publish/${rx.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${s.queue.token}`, "upstash-retries": String(retries) },
    body: path,
  });
  return ((await res.json()) as { messageId: string }).messageId;
}

async function states(s: TestStashd, id: string): Promise<string[]> {
  const res = await fetch(`${s.queue.url}/v2/events?messageId=${id}`, {
    headers: { authorization: `Bearer ${s.queue.token}` },
  });
  return ((await res.json()) as { events: { state: string }[] }).events.map((e) => e.state);
}

describe("graceful stop", () => {
  it("records an attempt whose response arrives within the grace period", async () => {
    const s = await stashdOn();
    rx.delayMs = 150;
    const id = await publish(s, "/arrives", 0);
    await eventually(() => expect(rx.requests.some((r) => r.body === "/arrives")).toBe(true));
    await s.stopKeepingData();
    const again = await stashdOn(s.dataDir);
    try {
      expect(await states(again, id)).toContain("DELIVERED");
    } finally {
      await again.stop();
    }
  });

  it("is bounded by the grace period; a cut-off attempt is redelivered, not dead-lettered", async () => {
    const s = await stashdOn();
    rx.delayMs = 60_000;
    const id = await publish(s, "/hangs", 0);
    await eventually(() => expect(rx.requests.some((r) => r.body === "/hangs")).toBe(true));
    const started = Date.now();
    await s.stopKeepingData();
    expect(Date.now() - started).toBeLessThan(GRACE_MS + 2_500);
    rx.delayMs = 0;
    const again = await stashdOn(s.dataDir);
    try {
      await eventually(
        () => expect(rx.requests.filter((r) => r.body === "/hangs").length).toBe(2),
        { timeoutMs: 10_000 },
      );
      await eventually(async () => expect(await states(again, id)).toContain("DELIVERED"));
      expect(await states(again, id)).not.toContain("FAILED");
    } finally {
      await again.stop();
      rmSync(s.dataDir, { recursive: true, force: true });
    }
  });
});
