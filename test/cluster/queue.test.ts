import { Client } from "@upstash/qstash";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textOf } from "../../src/shared/redis/cluster/commands.js";
import { hashSlot } from "../../src/shared/redis/cluster/slot.js";
import { prefixOf, QUEUE_PREFIX } from "../../src/queue/store/keys.js";
import { makePartitions, partitionTags } from "../../src/queue/store/partitions.js";
import {
  mastersOf,
  migrateSlot,
  onNode,
  ownerPort,
  startTestCluster,
  type TestCluster,
} from "../harness/cluster.js";
import { eventually } from "../harness/eventually.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { startReceiver, type TestReceiver } from "../queue/receiver.js";
import { sharedQueueOptions, TEST_KEYS, TEST_TOKEN } from "../queue/setup.js";
import { killNode, publishLoad, QUEUE_SLOT, queueMaster } from "./queue-load.js";

/**
 * The queue on a real Redis Cluster (3 masters, 3 replicas): two stashd processes (in-process
 * instances) whose STASHD_QUEUE_REDIS_URL names one node; the queue's slot moved to another
 * master and its master SIGKILLed while publishes go on, with no acknowledged publish lost.
 */
let cluster: TestCluster;
let a: TestStashd;
let b: TestStashd;
let rx: TestReceiver;

beforeAll(async () => {
  cluster = await startTestCluster();
  const shared = sharedQueueOptions(cluster.url);
  a = await startStashd(shared);
  b = await startStashd(shared);
  rx = await startReceiver(() => TEST_KEYS);
});
afterAll(async () => {
  await rx?.close();
  await a?.stop();
  await b?.stop();
  await cluster?.stop();
});

/**
 * Deduplication ids whose publishes are placed in partition 0 (of the 3 the cluster gets): the
 * id hashes there both bare and as the store's `id:` dedup key.
 */
function inPartitionZero(): () => string {
  const parts = makePartitions(3, () => ({ exec: unused, execMany: unused }));
  let n = 0;
  return () => {
    for (;;) {
      const id = `main-${Date.now()}-${n++}`;
      if (parts.ofName(id).index === 0 && parts.ofName(`id:${id}`).index === 0) return id;
    }
  };
}
const unused = (): Promise<never> => Promise.reject(new Error("not used"));

/** Message ids the receiver got (each delivery once or more). */
const deliveredIds = (): Set<string> =>
  new Set(rx.requests.map((r) => String(r.headers["upstash-message-id"])));

async function expectAllDelivered(ids: string[]): Promise<void> {
  await eventually(() => expect(ids.filter((id) => !deliveredIds().has(id))).toEqual([]), {
    timeoutMs: 30_000,
    intervalMs: 100,
  });
}

describe("the queue on a Redis Cluster", () => {
  it("publishes and delivers through either process, each message once", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const s = i % 2 === 0 ? a : b;
      const client = new Client({ baseUrl: s.queue.url, token: TEST_TOKEN });
      ids.push((await client.publish({ url: `${rx.url}/m`, body: String(i) })).messageId);
    }
    await expectAllDelivered(ids);
    const mine = rx.requests.filter((r) => ids.includes(String(r.headers["upstash-message-id"])));
    expect(mine).toHaveLength(40);
    expect(mine.every((r) => r.signatureError === undefined)).toBe(true);
    const client = new Client({ baseUrl: b.queue.url, token: TEST_TOKEN });
    await eventually(async () => {
      const logs = await client.logs({ filter: { state: "DELIVERED", count: 1000 } });
      const delivered = new Set(logs.logs.map((l) => l.messageId));
      expect(ids.filter((id) => !delivered.has(id))).toEqual([]);
    });
  });

  it("spreads the queue over every master, one partition each, and delivers from all", async () => {
    const [seed] = await mastersOf(cluster);
    const tags = partitionTags(3);
    const owners = await Promise.all(tags.map((t) => ownerPort(seed as number, hashSlot(t))));
    expect(new Set(owners).size).toBe(3);
    const stored = await onNode(owners[0] as number, ["GET", `${QUEUE_PREFIX}partitions`]);
    expect(textOf(stored)).toBe("3");
    const client = new Client({ baseUrl: a.queue.url, token: TEST_TOKEN });
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      ids.push((await client.publish({ url: `${rx.url}/spread`, body: String(i) })).messageId);
    }
    await expectAllDelivered(ids);
    // Each partition's log stream, on its own master, recorded some of them.
    for (const [i, tag] of tags.entries()) {
      const events = await onNode(owners[i] as number, ["XLEN", `${prefixOf(tag)}log`]);
      expect(events).toMatchObject({ kind: "int" });
      expect(Number((events as { value: string }).value)).toBeGreaterThan(0);
    }
    // Each message's log index is in its partition's slot, on that master, and answers the
    // events API's filter by message id.
    const parts = makePartitions(3, () => ({ exec: unused, execMany: unused }));
    for (const id of ids.slice(0, 3)) {
      const p = parts.ofMessage(id);
      await eventually(async () => {
        const indexed = await onNode(owners[p.index] as number, ["LLEN", p.keys.messageLog(id)]);
        expect(indexed).toEqual({ kind: "int", value: "3" });
        const logs = await client.logs({ filter: { messageId: id } });
        expect(logs.logs.map((l) => l.state)).toEqual(["DELIVERED", "ACTIVE", "CREATED"]);
      });
    }
  });

  it("runs FIFO queues across the processes", async () => {
    const client = new Client({ baseUrl: a.queue.url, token: TEST_TOKEN });
    const queue = client.queue({ queueName: "orders" });
    await queue.upsert({ parallelism: 1 });
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      ids.push((await queue.enqueue({ url: `${rx.url}/fifo`, body: `o${i}` })).messageId);
    }
    await expectAllDelivered(ids);
    const bodies = rx.requests.filter((r) => r.url.endsWith("/fifo")).map((r) => r.body);
    expect(bodies).toEqual(ids.map((_, i) => `o${i}`));
  });

  it("bulk-cancels page by page over the partitions on every master", async () => {
    const client = new Client({ baseUrl: a.queue.url, token: TEST_TOKEN });
    const publish = (url: string, i: number) =>
      client.batchJSON(
        Array.from({ length: 1000 }, (_, j) => ({ url, body: `${i}-${j}`, delay: 3600 })),
      );
    // 2300 + 1300 pending messages: pages of ids (1000) spread over the 3 partitions.
    for (let i = 0; i < 2; i++) await publish(`${rx.url}/later-a`, i);
    await publish(`${rx.url}/later-b`, 2);
    await client.batchJSON(
      Array.from({ length: 600 }, (_, j) => ({
        url: `${rx.url}/later-${j % 2 === 0 ? "a" : "b"}`,
        body: `x${j}`,
        delay: 3600,
      })),
    );
    const later = new Client({ baseUrl: b.queue.url, token: TEST_TOKEN });
    expect(
      await later.messages.cancel({ filter: { url: `${rx.url}/later-a` }, count: 1500 }),
    ).toEqual({
      cancelled: 1500,
    });
    expect(
      await later.messages.cancel({ filter: { url: `${rx.url}/later-a` }, count: 2000 }),
    ).toEqual({
      cancelled: 800,
    });
    expect(await later.messages.cancel({ all: true, count: 100 })).toEqual({ cancelled: 100 });
    // Without a count the SDK sends 100: the rest (1200) takes 12 calls, as its users loop.
    const calls: number[] = [];
    for (let n = -1; n !== 0; calls.push(n))
      ({ cancelled: n } = await later.messages.cancel({ all: true }));
    expect(calls).toEqual([...(Array(12).fill(100) as number[]), 0]);
  }, 60_000);

  it("pauses its scripts while the queue's slot is migrating, writing nothing half", async () => {
    const from = await queueMaster(cluster);
    const to = (await mastersOf(cluster)).find((p) => p !== from) as number;
    const id = async (port: number) => textOf(await onNode(port, ["CLUSTER", "MYID"])) ?? "";
    const slot = String(QUEUE_SLOT);
    // Every key the enqueue script declares exists (due, pending, active, log), so Redis itself
    // lets it run on the migrating slot: only its own guard can stop it. Deduplication ids place
    // these publishes in partition 0, the one whose slot migrates.
    const client = new Client({ baseUrl: a.queue.url, token: TEST_TOKEN });
    const inMain = inPartitionZero();
    await client.publish({
      url: `${rx.url}/later`,
      body: "l",
      delay: 3600,
      deduplicationId: inMain(),
    });
    rx.delayMs = 2_000;
    const held = rx.requests.length;
    await client.publish({ url: `${rx.url}/held`, body: "h", deduplicationId: inMain() });
    await eventually(() => expect(rx.requests.length).toBeGreaterThan(held));
    await onNode(to, ["CLUSTER", "SETSLOT", slot, "IMPORTING", await id(from)]);
    await onNode(from, ["CLUSTER", "SETSLOT", slot, "MIGRATING", await id(to)]);
    // The enqueue script would create the message's hash, a key the migrating slot no longer
    // takes on this node: it must stop before its first write and be retried (TRYAGAIN).
    let settled = false;
    const publish = fetch(`${a.queue.url}/v2/publish/${rx.url}/paused`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "upstash-deduplication-id": inMain() },
      body: "p",
    }).finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 500));
    expect(settled).toBe(false);
    await onNode(from, ["CLUSTER", "SETSLOT", slot, "STABLE"]);
    await onNode(to, ["CLUSTER", "SETSLOT", slot, "STABLE"]);
    const res = await publish;
    rx.delayMs = 0;
    expect(res.status).toBe(201);
    await expectAllDelivered([((await res.json()) as { messageId: string }).messageId]);
  });

  it("loses no acknowledged publish while the queue's slot moves to another master", async () => {
    const from = await queueMaster(cluster);
    const to = (await mastersOf(cluster)).find((p) => p !== from) as number;
    const load = publishLoad([a.queue.url, b.queue.url], TEST_TOKEN, `${rx.url}/reshard`);
    await eventually(() => expect(load.acked().length).toBeGreaterThan(30));
    await migrateSlot(cluster, QUEUE_SLOT, from, to);
    const movedAt = Date.now();
    await eventually(() =>
      expect(
        load.publishes.filter((p) => p.startedAt > movedAt && p.messageId).length,
      ).toBeGreaterThan(30),
    );
    const publishes = await load.stop();
    // Transitions wait (TRYAGAIN) while the slot migrates and go on at the new owner: none fails.
    expect(publishes.filter((p) => p.error)).toEqual([]);
    expect(await queueMaster(cluster)).toBe(to);
    await expectAllDelivered(load.acked());
  });

  it("loses no acknowledged publish when the queue's master is killed", async () => {
    const victim = await queueMaster(cluster);
    const load = publishLoad([a.queue.url, b.queue.url], TEST_TOKEN, `${rx.url}/failover`);
    await eventually(() => expect(load.acked().length).toBeGreaterThan(30));
    const killedAt = Date.now();
    await killNode(cluster, victim);
    await eventually(async () => expect(await queueMaster(cluster)).not.toBe(victim), {
      timeoutMs: 15_000,
      intervalMs: 100,
    });
    const promotedAt = Date.now();
    await eventually(
      () =>
        expect(
          load.publishes.filter((p) => p.startedAt > promotedAt && p.messageId).length,
        ).toBeGreaterThan(30),
      { timeoutMs: 25_000 },
    );
    const publishes = await load.stop();
    // Only publishes in flight at the kill may fail (their outcome is unknown: 503); those sent
    // later waited for the promotion. Every 201 was on a replica first, so it survived.
    const failed = publishes.filter((p) => p.error);
    for (const f of failed) expect(f.startedAt).toBeLessThanOrEqual(killedAt + 200);
    await expectAllDelivered(load.acked());
  });
});
