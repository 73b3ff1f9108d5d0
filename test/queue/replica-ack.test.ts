import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { onNode } from "../harness/cluster.js";
import { eventually } from "../harness/eventually.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { FAST_QUEUE, partitionsAt } from "./setup.js";

/**
 * A queue Redis with one replica: a publish is acknowledged only once the replica holds it
 * (WAIT, docs/scaling.md, Acknowledged means replicated), a replica that does not confirm in
 * time makes the publish a 503, and a master without online replicas does not wait.
 */
let master: TestRedis;
let replica: TestRedis;
let s: TestStashd;

const onlineReplicas = async (): Promise<number> => {
  const info = await onNode(master.port, ["INFO", "replication"]);
  const text = info.kind === "bulk" ? info.value.toString() : "";
  return (text.match(/^slave\d+:.*state=online/gm) ?? []).length;
};

beforeAll(async () => {
  master = await startRedis();
  replica = await startRedis([
    "--replicaof",
    "127.0.0.1",
    String(master.port),
    "--enable-debug-command",
    "yes",
  ]);
  await eventually(async () => expect(await onlineReplicas()).toBe(1), { timeoutMs: 10_000 });
  s = await startStashd({
    queueRedisUrl: master.url,
    // Long enough for a replica on a busy 2-core CI machine (the tier runs files in parallel;
    // 300 ms once failed the start-up write), short enough for the sleep below to outlast it.
    queueReplicaAckTimeoutMs: 1_000,
    ...FAST_QUEUE,
  });
});
afterAll(async () => {
  await s?.stop();
  await replica?.stop();
  await master?.stop();
});

/** The queue's partitions, read on the master. */
const partitions = () =>
  partitionsAt({
    exec: (argv) => onNode(master.port, [...argv]),
    execMany: () => Promise.reject(),
  });

/** Publishes one message delayed by an hour (so it stays stored); the response. */
const publish = (): Promise<Response> =>
  fetch(`${s.queue.url}/v2/publish/http://127.0.0.1:9/never`, {
    method: "POST",
    headers: { authorization: `Bearer ${s.queue.token}`, "upstash-delay": "1h" },
    body: "x",
  });

describe("acknowledgements wait for replicas", () => {
  it("answers 201 once the replica holds the message", async () => {
    for (let i = 0; i < 5; i++) {
      const res = await publish();
      expect(res.status).toBe(201);
      const { messageId } = (await res.json()) as { messageId: string };
      const key = (await partitions()).ofMessage(messageId).keys.message(messageId);
      const held = await onNode(replica.port, ["EXISTS", key]);
      expect(held).toEqual({ kind: "int", value: "1" });
    }
  });

  it("answers 503 when the replica does not confirm in time, with the message kept", async () => {
    // Every partition's pending set (a count above 1 puts them all on this one Redis).
    const pending = async () => {
      const counts = await (
        await partitions()
      ).each((p) => onNode(master.port, ["ZCARD", p.keys.pending]));
      const sum = counts.reduce((n, c) => n + (c.kind === "int" ? Number(c.value) : 0), 0);
      return { kind: "int", value: String(sum) } as const;
    };
    const before = await pending();
    const asleep = onNode(replica.port, ["DEBUG", "SLEEP", "2.5"]);
    await new Promise((r) => setTimeout(r, 100));
    const res = await publish();
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: string }).error).toMatch(/reached 0 of 1 replicas/);
    await asleep;
    // The write was applied on the master: it is not lost, only not promised to survive it.
    const after = await pending();
    expect(Number(after.kind === "int" ? after.value : 0)).toBe(
      Number(before.kind === "int" ? before.value : 0) + 1,
    );
    await eventually(async () => expect((await publish()).status).toBe(201));
  });

  it("does not wait when the master has no replica online", async () => {
    await onNode(replica.port, ["REPLICAOF", "NO", "ONE"]);
    await eventually(async () => expect(await onlineReplicas()).toBe(0));
    await eventually(async () => expect((await publish()).status).toBe(201));
  });
});
