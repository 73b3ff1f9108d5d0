import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textOf } from "../../src/shared/redis/cluster/commands.js";
import { AppError } from "../../src/shared/errors.js";
import { hashSlot, SLOT_COUNT } from "../../src/shared/redis/cluster/slot.js";
import { RedisPool } from "../../src/shared/redis/pool.js";
import { QUEUE_PREFIX } from "../../src/queue/store/keys.js";
import { makePartitions, partitionTags } from "../../src/queue/store/partitions.js";
import { partitionCount, type QueueRedis } from "../../src/queue/store/redis.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { startStashd } from "../harness/stashd.js";
import { sharedQueueOptions } from "./setup.js";

/**
 * The partition layout (src/queue/store/partitions.ts): tags per slot range, placement by name
 * and id, and the partition count fixed at the queue's first use (src/queue/store/redis.ts).
 */
const refuse = (): Promise<never> => Promise.reject(new Error("no Redis in this test"));
const noRedis = (): QueueRedis => ({ exec: refuse, execMany: refuse });

describe("partition tags", () => {
  it("keeps partition 0 on the tag every queue key had before partitions", () => {
    expect(partitionTags(1)).toEqual(["stashd:q"]);
    expect(makePartitions(1, noRedis).main.keys.prefix).toBe(QUEUE_PREFIX);
  });

  it.each([2, 3, 4, 6, 16])("gives %i partitions one equal share of the slots each", (n) => {
    const tags = partitionTags(n);
    expect(new Set(tags).size).toBe(n);
    const ranges = tags.map((t) => Math.floor((hashSlot(t) * n) / SLOT_COUNT));
    expect(new Set(ranges).size).toBe(n);
    // Every key of a partition falls in its tag's slot.
    for (const p of makePartitions(n, noRedis).all) {
      expect(hashSlot(p.keys.message("msg_x"))).toBe(hashSlot(p.tag));
      expect(hashSlot(p.keys.due)).toBe(hashSlot(p.tag));
    }
  });
});

describe("placement", () => {
  const parts = makePartitions(3, noRedis);

  it("spreads plain message ids over every partition and draws placed ids into theirs", () => {
    const seen = new Set<number>();
    for (let i = 0; i < 300; i++) seen.add(parts.ofMessage(parts.newMessageId()).index);
    expect(seen.size).toBe(3);
    for (const p of parts.all) {
      const id = parts.newMessageId(p);
      expect(id).toMatch(/^msg_[1-9A-HJ-NP-Za-km-z]{26}$/);
      expect(parts.ofMessage(id)).toBe(p);
    }
  });

  it("places by flow-control key and queue together, else by dedup key, else nowhere", () => {
    expect(parts.place({})).toBeUndefined();
    expect(parts.place({ dedup: "id:a" })).toBe(parts.ofName("id:a"));
    expect(parts.place({ queue: "q", dedup: "id:a" })).toBe(parts.ofName("q"));
    expect(parts.place({ flowControl: ["k", undefined] })).toBe(parts.ofName("k"));
  });

  it("honours hash tags so a queue and a key can be put together, and refuses a split", () => {
    expect(parts.ofName("orders-{acct7}")).toBe(parts.ofName("limit-{acct7}"));
    expect(parts.place({ queue: "orders-{acct7}", flowControl: ["limit-{acct7}"] })).toBe(
      parts.ofName("acct7"),
    );
    let other = 0;
    while (parts.ofName(`k${other}`) === parts.ofName("a")) other++;
    const split = () => parts.place({ queue: "a", flowControl: [`k${other}`] });
    expect(split).toThrow(AppError);
    expect(split).toThrow(/different queue partitions.*hash tag/);
  });
});

describe("the stored partition count", () => {
  let redis: TestRedis;
  let pool: RedisPool;
  beforeAll(async () => {
    redis = await startRedis();
    pool = new RedisPool(
      { host: "127.0.0.1", port: redis.port },
      { size: 1, connectTimeoutMs: 2000, retryBackoffMs: 50 },
    );
  });
  afterAll(async () => {
    await pool?.close();
    await redis?.stop();
  });

  it("is set at first use and kept; a different setting stops the start", async () => {
    await pool.exec(["FLUSHALL"]);
    expect(await partitionCount(pool, 0, 3)).toBe(3);
    expect(await partitionCount(pool, 0, 1)).toBe(3);
    expect(await partitionCount(pool, 3, 1)).toBe(3);
    await expect(partitionCount(pool, 2, 1)).rejects.toThrow(/created with 3 partition/);
    await expect(partitionCount(pool, 65, 1)).rejects.toThrow(/between 0 and 64/);
  });

  it("upgrades a queue from before partitions in place as one partition", async () => {
    await pool.exec(["FLUSHALL"]);
    await pool.exec(["HSET", `${QUEUE_PREFIX}keys`, "current", "sig_a", "next", "sig_b"]);
    expect(await partitionCount(pool, 0, 3)).toBe(1);
    await expect(partitionCount(pool, 3, 3)).rejects.toThrow(/created with 1 partition/);
  });

  it("refuses a stashd started with another count than its queue's, with the reason", async () => {
    await pool.exec(["FLUSHALL"]);
    const first = await startStashd({ ...sharedQueueOptions(redis.url), queuePartitions: 2 });
    await first.stop();
    await expect(
      startStashd({ ...sharedQueueOptions(redis.url), queuePartitions: 3 }),
    ).rejects.toThrow(/STASHD_QUEUE_PARTITIONS is 3 but this queue was created with 2/);
    // Unset, the setting takes the stored count.
    const again = await startStashd({ ...sharedQueueOptions(redis.url), queuePartitions: 0 });
    await again.stop();
    expect(String(await pool.exec(["GET", `${QUEUE_PREFIX}partitions`]).then(textOf))).toBe("2");
  });
});
