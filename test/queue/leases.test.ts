import http from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import type { MessageMeta } from "../../src/queue/domain/message.js";
import { queueKeys } from "../../src/queue/store/keys.js";
import { MessageStore, type NewMessage } from "../../src/queue/store/message-store.js";
import { parseRedisUrl } from "../../src/shared/redis/connection.js";
import { RedisPool } from "../../src/shared/redis/pool.js";
import { eventually } from "../harness/eventually.js";
import { startRedis } from "../harness/redis.js";
import { startStashd } from "../harness/stashd.js";
import { listenLocal, startReceiver } from "./receiver.js";
import { partitionsAt, queueEnv, sharedQueueOptions, type QueueTestEnv } from "./setup.js";
import { singlePartition } from "../../src/queue/store/partitions.js";

/**
 * Regression for reliability scenario 1 (docs/reliability.md): an attempt must not outlive its
 * delivery lease, or a second process delivers the same message while the first attempt is still
 * in flight (a FIFO queue or flow-control key would exceed its parallelism).
 */

interface Hanging {
  url: string;
  /** Per request: when it arrived and when its connection closed (ms since epoch). */
  requests: { retried: string; arrived: number; closed?: number; answered: boolean }[];
  /** Whether to answer the next requests at once (200) instead of never. */
  answer: boolean;
  close(): Promise<void>;
}

/** A receiver that never answers (until `answer` is set) and records when each request closed. */
async function hangingReceiver(): Promise<Hanging> {
  const state: Pick<Hanging, "requests" | "answer"> = { requests: [], answer: false };
  const server = http.createServer((req, res) => {
    const entry = {
      retried: String(req.headers["upstash-retried"]),
      arrived: Date.now(),
      answered: state.answer,
    } as Hanging["requests"][number];
    state.requests.push(entry);
    res.on("close", () => (entry.closed = Date.now()));
    req.resume();
    if (state.answer) req.on("end", () => res.end("ok"));
  });
  return Object.assign(state, await listenLocal(server));
}

let env: QueueTestEnv | undefined;
let rx: Hanging | undefined;
afterEach(async () => {
  await rx?.close();
  await env?.close();
  env = rx = undefined;
});

async function publishHanging(e: QueueTestEnv, r: Hanging): Promise<string> {
  const res = await e.api(`/v2/publish/${r.url}/slow`, {
    method: "POST",
    headers: { "upstash-timeout": "60s", "upstash-retries": "0" },
    body: "x",
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { messageId: string }).messageId;
}

describe("delivery leases", () => {
  it("aborts an attempt whose lease was taken over, and the message is delivered again", async () => {
    env = await queueEnv({ queueLeaseMs: 600 });
    rx = await hangingReceiver();
    const id = await publishHanging(env, rx);
    const first = await eventually(() => rx?.requests[0] ?? Promise.reject(new Error("none")));
    // What a reap and a claim by another process leave behind: the lease has a new holder.
    const pool = new RedisPool(parseRedisUrl(env.redis.url), {
      size: 1,
      connectTimeoutMs: 1000,
      retryBackoffMs: 50,
    });
    const key = (await partitionsAt(pool)).ofMessage(id).keys.message(id);
    await pool.exec(["HSET", key, "lease", "another-process"]);
    await pool.close();
    rx.answer = true;
    // The next renewal (every 200 ms) finds the lease lost and aborts the attempt at once,
    // long before its 60 s timeout.
    await eventually(() => expect(first.closed).toBeDefined(), { timeoutMs: 3000 });
    expect(first.answered).toBe(false);
    // The lease is no longer renewed: the reaper returns the message, and it is delivered. The
    // abandoned attempt was not recorded, so it does not count as a retry (retries = 0 here).
    await eventually(async () => {
      const res = await env?.api(`/v2/logs?messageId=${id}&state=DELIVERED`);
      expect(((await res?.json()) as { logs: unknown[] }).logs).toHaveLength(1);
    });
    expect(rx.requests.map((r) => r.retried)).toEqual(["0", "0"]);
    expect(rx.requests[1]?.arrived ?? 0).toBeGreaterThanOrEqual(first.closed ?? Infinity);
  });

  it("aborts an attempt before its lease ends when renewals fail (Redis gone)", async () => {
    env = await queueEnv({ queueLeaseMs: 1000 });
    rx = await hangingReceiver();
    await publishHanging(env, rx);
    const first = await eventually(() => rx?.requests[0] ?? Promise.reject(new Error("none")));
    await env.redis.stop();
    const stopped = Date.now();
    // Renewals fail from now on; the last one succeeded at most ~333 ms ago, so the lease ends
    // within ~1 s; the keeper aborts the attempt a fifth of a lease before that.
    await eventually(() => expect(first.closed).toBeDefined(), { timeoutMs: 3000 });
    expect((first.closed ?? 0) - stopped).toBeLessThan(1000);
    expect(first.answered).toBe(false);
  });
});

describe("delivery leases during a graceful stop", () => {
  it("keeps renewing while an attempt finishes, so no other process delivers it meanwhile", async () => {
    const redis = await startRedis();
    const shared = { ...sharedQueueOptions(redis.url), queueLeaseMs: 600 };
    const a = await startStashd({ ...shared, shutdownGraceMs: 5000 });
    const b = await startStashd(shared);
    const slow = await startReceiver(() => ({ current: "sig_current", next: "sig_next" }));
    slow.delayMs = 1500;
    try {
      // Published to `a` with free slots: `a` leases and delivers it itself.
      const res = await fetch(`${a.queue.url}/v2/publish/${slow.url}/graceful`, {
        method: "POST",
        headers: { authorization: "Bearer dG9rZW4=", "upstash-timeout": "10s" },
        body: "x",
      });
      const { messageId } = (await res.json()) as { messageId: string };
      await eventually(() => expect(slow.requests).toHaveLength(1));
      // The attempt outlasts the 600 ms lease by far; `b`'s reaper runs every 50 ms.
      await a.stop();
      expect(slow.requests).toHaveLength(1);
      const logs = await fetch(`${b.queue.url}/v2/logs?messageId=${messageId}&state=DELIVERED`, {
        headers: { authorization: "Bearer dG9rZW4=" },
      });
      expect(((await logs.json()) as { logs: unknown[] }).logs).toHaveLength(1);
    } finally {
      await slow.close();
      await b.stop();
      await redis.stop();
    }
  });
});

describe("lease deadlines on Redis's clock", () => {
  const LEASE_MS = 300;
  const TEN_MINUTES = 600_000;

  async function withStore(fn: (store: MessageStore, pool: RedisPool) => Promise<void>) {
    const redis = await startRedis();
    const pool = new RedisPool(parseRedisUrl(redis.url), {
      size: 1,
      connectTimeoutMs: 1000,
      retryBackoffMs: 50,
    });
    try {
      await fn(new MessageStore(singlePartition(pool), 60_000), pool);
    } finally {
      await pool.close();
      await redis.stop();
    }
  }

  function message(id: string, now: number): NewMessage {
    const meta: MessageMeta = {
      messageId: id,
      url: "http://127.0.0.1:9/x",
      method: "POST",
      header: {},
      createdAt: now,
      notBefore: 0,
      maxRetries: 0,
      timeoutMs: 1000,
      depth: 0,
    };
    return { meta, body: Buffer.from("x"), dueAt: now };
  }

  it("a process whose clock runs ahead does not reap a lease that has not ended", async () => {
    await withStore(async (store, pool) => {
      const now = Date.now();
      await store.enqueue(now, [message("msg_ahead", now)]);
      const [claimed] = (await store.claim(now, 10, LEASE_MS)).claimed;
      expect(claimed?.meta.messageId).toBe("msg_ahead");
      // Another process, its clock ten minutes ahead, runs the reaper at once.
      expect(await store.reap(now + TEN_MINUTES)).toBe(0);
      const lease = await pool.exec(["HGET", queueKeys.message("msg_ahead"), "lease"]);
      expect(lease.kind === "bulk" && lease.value.toString()).toBe(claimed?.token);
      // Once the lease has really ended, a process whose clock runs behind reaps it.
      await eventually(async () => expect(await store.reap(now - TEN_MINUTES)).toBe(1));
    });
  });

  it("renewals extend on Redis's clock and report leases held by someone else", async () => {
    await withStore(async (store) => {
      const now = Date.now();
      await store.enqueue(now, [message("msg_a", now), message("msg_b", now)]);
      const { claimed } = await store.claim(now, 10, LEASE_MS);
      expect(claimed).toHaveLength(2);
      const [a, b] = claimed;
      const lost = await store.renew(60_000, [
        [a?.meta.messageId ?? "", a?.token ?? ""],
        [b?.meta.messageId ?? "", "not-the-token"],
      ]);
      expect([...lost]).toEqual(["msg_b"]);
      // msg_b was not extended: it is reaped after its 300 ms; msg_a stays leased for a minute.
      await eventually(async () => expect(await store.reap(Date.now())).toBe(1));
      const due = (await store.claim(Date.now(), 10, LEASE_MS)).claimed;
      expect(due.map((c) => c.meta.messageId)).toEqual(["msg_b"]);
    });
  });
});
