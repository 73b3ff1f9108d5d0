import { readQueueDepth } from "../../src/queue/store/depth.js";
import { afterAll, beforeAll, beforeEach, expect } from "vitest";
import type { MessageMeta } from "../../src/queue/domain/message.js";
import { DlqStore } from "../../src/queue/store/dlq-store.js";
import { FlowControlStore } from "../../src/queue/store/flow-control-store.js";
import { MessageStore, type NewMessage } from "../../src/queue/store/message-store.js";
import { QueueStore } from "../../src/queue/store/queue-store.js";
import { ScheduleStore, type ScheduleDef } from "../../src/queue/store/schedule-store.js";
import { SigningKeys } from "../../src/queue/store/signing-keys.js";
import { TopicStore } from "../../src/queue/store/topic-store.js";
import { WorkflowStore } from "../../src/queue/workflow/state/store.js";
import { parseRedisUrl } from "../../src/shared/redis/connection.js";
import type { RedisPool } from "../../src/shared/redis/pool.js";
import type { Arg, Reply } from "../../src/shared/redis/resp.js";
import { eventually } from "../harness/eventually.js";
import { startRedis, testPool, type TestRedis } from "../harness/redis.js";
import { singlePartition } from "../../src/queue/store/partitions.js";

const USER = "scripted";

/** A Redis glob matching exactly `key`. */
const exactly = (key: string): string => key.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

/**
 * A pool for the queue stores that runs every script call (EVAL/EVALSHA) as the ACL user
 * `scripted`, reconfigured before each call to reach only the keys the call declares plus the
 * `families` (glob patterns of the names includes/keys.lua builds). Other commands (the stores'
 * plain reads, SCRIPT LOAD) run as the default user. Key refusals are collected in `refusals`,
 * the SHAs of the scripts that ran in `ran`.
 */
export class ScriptGuard {
  readonly refusals: string[] = [];
  readonly ran: string[] = [];
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly admin: RedisPool,
    private readonly restricted: RedisPool,
    private readonly families: readonly string[],
  ) {}

  static async start(url: string, families: readonly string[]): Promise<ScriptGuard> {
    const admin = testPool(url, 1);
    await admin.exec(["ACL", "SETUSER", USER, "on", ">pw", "+@all", "resetkeys"]);
    const restricted = testPool({ ...parseRedisUrl(url), username: USER, password: "pw" }, 1);
    return new ScriptGuard(admin, restricted, families);
  }

  /** Stands in for the stores' RedisPool (they use exec and execMany only). */
  get pool(): RedisPool {
    const guard = {
      exec: (argv: readonly Arg[]) => this.exec(argv),
      execMany: (commands: readonly (readonly Arg[])[]) => this.admin.execMany(commands),
    };
    return guard as unknown as RedisPool;
  }

  async close(): Promise<void> {
    await this.restricted.close();
    await this.admin.close();
  }

  private exec(argv: readonly Arg[]): Promise<Reply> {
    if (!String(argv[0]).toUpperCase().startsWith("EVAL")) return this.admin.exec(argv);
    // One call at a time: the user's key permissions are set for this call's keys.
    const run = this.queue.then(() => this.runRestricted(argv));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async runRestricted(argv: readonly Arg[]): Promise<Reply> {
    const keys = argv.slice(3, 3 + Number(String(argv[2]))).map(String);
    const allowed = [...keys.map(exactly), ...this.families].map((p) => `~${p}`);
    await this.admin.exec(["ACL", "SETUSER", USER, "resetkeys", ...allowed]);
    const reply = await this.restricted.exec(argv);
    if (isKeyRefusal(reply)) this.refusals.push(reply.kind === "error" ? reply.value : "");
    if (reply.kind !== "error" && String(argv[0]).toUpperCase() === "EVALSHA") {
      this.ran.push(String(argv[1]));
    }
    return reply;
  }
}

/** Redis refused a key to the script's user: a declared key (NOPERM) or one inside the script. */
export function isKeyRefusal(reply: Reply): boolean {
  return reply.kind === "error" && /NOPERM|can't access at least one of the keys/.test(reply.value);
}

const MIN = 60_000;

/** A message due at `now` to a URL nothing listens on, unless `extra` says otherwise. */
export function message(id: string, now: number, extra: Partial<MessageMeta> = {}): NewMessage {
  const meta: MessageMeta = {
    messageId: id,
    url: "http://127.0.0.1:9/never",
    method: "POST",
    header: {},
    createdAt: now,
    notBefore: now,
    maxRetries: 3,
    timeoutMs: 1000,
    depth: 0,
    ...extra,
  };
  return { meta, body: Buffer.from(`body of ${id}`), dueAt: now };
}

/**
 * Drives every queue transition through the real stores on `pool`, along the paths that reach
 * each helper: leases, retries, the DLQ, callbacks, cancels, FIFO queue slots, flow-control
 * admission and wake-up, schedules, URL groups and signing keys.
 */
export async function runEveryTransition(pool: RedisPool): Promise<void> {
  const messages = new MessageStore(singlePartition(pool), MIN);
  const queues = new QueueStore(singlePartition(pool), MIN, 100);
  const now = Date.now();
  await messagePaths(messages, new DlqStore(singlePartition(pool)), now);
  expect((await readQueueDepth(singlePartition(pool))).pending).toBeGreaterThanOrEqual(0);
  await queuePaths(messages, queues, now);
  await flowControlPaths(messages, new FlowControlStore(singlePartition(pool)), now);
  await otherPaths(pool, now);
  await workflowPaths(pool, now);
}

async function messagePaths(messages: MessageStore, dlq: DlqStore, now: number): Promise<void> {
  const dedup = { key: "d1", windowMs: MIN, response: "[]" };
  expect(await messages.enqueue(now, [message("m1", now)], dedup)).toEqual({ stored: true });
  expect((await messages.enqueue(now, [message("m2", now)], dedup)).stored).toBe(false);
  await messages.enqueue(now, [message("m3", now)], undefined, { token: "t0", leaseMs: MIN });
  const {
    claimed: [first],
  } = await messages.claim(now, 1, MIN);
  if (!first) throw new Error("nothing claimed");
  const held = [
    [first.meta.messageId, first.token] as [string, string],
    ["m3", "stale"] as [string, string],
  ];
  expect(await messages.renew(MIN, held)).toEqual(new Set(["m3"]));
  const retry = { token: first.token, attempt: "{}", children: [] };
  await messages.finish(now, {
    id: first.meta.messageId,
    outcome: "RETRY",
    nextDue: now,
    ...retry,
  });
  const {
    claimed: [again],
  } = await messages.claim(now, 1, MIN);
  if (!again) throw new Error("retry not claimed");
  const failed = {
    ...again.meta,
    dlqId: "dlq-1",
    failedAt: now,
    responseStatus: 500,
    responseHeader: {},
    responseBodyBase64: "",
  };
  const callback = message("cb1", now);
  await messages.finish(now, {
    id: again.meta.messageId,
    token: again.token,
    outcome: "FAILED",
    attempt: "{}",
    dlq: failed,
    children: [callback],
  });
  await messages.finish(now, {
    id: "m3",
    token: "wrong",
    outcome: "DELIVERED",
    attempt: "{}",
    children: [],
  });
  await messages.cancel(now, ["m3", "cb1"]);
  expect(await messages.retryDlq(now, "dlq-1", message("m4", now))).toBe(true);
  await messages.enqueue(now, [message("m5", now)], undefined, { token: "t1", leaseMs: 1 });
  await messages.cancel(now, ["m5"]);
  await messages.enqueue(now, [message("m6", now)], undefined, { token: "t2", leaseMs: 1 });
  await eventually(async () => expect(await messages.reap(now)).toBeGreaterThan(0));
  expect(await dlq.delete(["dlq-1", "dlq-none"])).toBe(0);
  expect(await dlq.indexWorkflow(["dlq-none"])).toBe(0);
}

async function queuePaths(messages: MessageStore, queues: QueueStore, now: number): Promise<void> {
  const q = { queueName: "q1" };
  const stored = await queues.enqueue(now, "q1", [message("q-a", now, q), message("q-b", now, q)]);
  expect(stored).toEqual({ stored: true, admitted: 1 });
  await queues.configure(now, "q1", { parallelism: 1, paused: false, create: false });
  const { claimed } = await messages.claim(now, 10, MIN);
  const head = claimed.find((c) => c.meta.messageId === "q-a");
  if (!head) throw new Error("queue head not claimed");
  const children = [message("q-cb", now, q)];
  await messages.finish(now, {
    id: "q-a",
    token: head.token,
    outcome: "DELIVERED",
    attempt: "{}",
    children,
  });
  await queues.enqueue(now, "q1", [message("q-c", now, q)]);
  await messages.cancel(now, ["q-c", "q-cb"]);
  expect(await queues.configure(now, "missing", { create: false })).toBeUndefined();
  expect(await queues.delete(now, "q1")).toBe(true);
  // More waiting messages than one deletion script cancels: the rest go by queue-drain steps.
  await queues.configure(now, "q2", { paused: true, create: true });
  const waiting = Array.from({ length: 450 }, (_, i) =>
    message(`q2-${i}`, now, { queueName: "q2" }),
  );
  await queues.enqueue(now, "q2", waiting);
  expect(await queues.delete(now, "q2")).toBe(true);
  expect(await messages.get("q2-449")).toBeUndefined();
  expect(await queues.delete(now, "q2")).toBe(false);
}

async function flowControlPaths(
  messages: MessageStore,
  flow: FlowControlStore,
  now: number,
): Promise<void> {
  // Unlimited parallelism, one per period: the second message waits for the rate (fcwake).
  const flowControl = { key: "k1", parallelism: 0, rate: 1, period: 1 };
  const batch = ["f1", "f2", "f3"].map((id) => message(id, now, { flowControl }));
  await messages.enqueue(now, batch);
  for (const action of ["pause", "resume", "resetRate", "reset"] as const)
    await flow.manage("k1", now, { action });
  await flow.manage("k1", now, { action: "pin", parallelism: 2, rate: 2, period: 1 });
  await flow.manage("k1", now, { action: "unpin", parallelism: true, rate: true });
  expect(await flow.manage("missing", now, { action: "pause" })).toBeUndefined();
  await messages.cancel(now, ["f1", "f3"]);
  await messages.reap(now + 5_000);
}

async function otherPaths(pool: RedisPool, now: number): Promise<void> {
  const schedules = new ScheduleStore(singlePartition(pool), 10);
  const def: ScheduleDef = {
    scheduleId: "s1",
    cron: "* * * * *",
    destination: "http://127.0.0.1:9/",
    options: { method: "POST", header: {}, maxRetries: 0, timeoutMs: 1000 },
    delayMs: 0,
    createdAt: now,
  };
  await schedules.save(def, Buffer.from("b"), now);
  const [claimed] = (await schedules.claim(now, 1, MIN)).ids;
  expect(claimed).toBe("s1");
  expect(await schedules.advance("s1", now, { last: now, next: now + MIN, states: {} })).toBe(true);
  expect(await schedules.setPaused("s1", true, 0)).toBe(true);
  expect(await schedules.delete("s1")).toBe(true);
  const topics = new TopicStore(singlePartition(pool), 1000);
  await topics.update("add", "g1", [{ url: "http://127.0.0.1:9/a" }]);
  await topics.update("headers", "g1", { "x-a": ["1"] });
  await topics.update("remove", "g1", [{ url: "http://127.0.0.1:9/a" }]);
  expect(await topics.update("headers", "g1", {})).toBe(false);
  await topics.update("add", "g2", [{ url: "http://127.0.0.1:9/b" }]);
  expect(await topics.delete("g2")).toBe(true);
  expect(await topics.delete("g2")).toBe(false);
  const keys = new SigningKeys(singlePartition(pool), MIN);
  await keys.init({ current: "c", next: "n" }, true);
  expect((await keys.rotate()).current).toBe("n");
}

/** Workflow runs: start, append, a wait kept / notified / timed out, and the end (workflow-*). */
async function workflowPaths(pool: RedisPool, now: number): Promise<void> {
  const runs = new WorkflowStore(singlePartition(pool), MIN, 100);
  const fc = { flowControl: { key: "wf-fc", parallelism: 1, rate: 0, period: 1 } };
  const msg = (id: string) =>
    message(id, now, { ...fc, workflow: { runId: "wfr_g", callType: "step" } });
  const entry = (id: string) => JSON.stringify({ messageId: id, body: "", callType: "step" });
  const handOff = { token: "tw", leaseMs: MIN };
  const start = await runs.start(
    now,
    runs.placeRun("wfr_g", "wf-fc"),
    "wfr_g",
    { url: "http://x" },
    [{ id: "w0", entry: entry("w0"), message: msg("w0") }],
    handOff,
  );
  expect(start).toEqual({ created: true });
  expect(
    await runs.append(now, "wfr_g", [{ id: "w1", entry: entry("w1"), message: msg("w1") }]),
  ).toBe("ok");
  // Handed off (no flow-control key, due now): leased to the caller by the append itself.
  const plain = message("w2", now, { workflow: { runId: "wfr_g", callType: "step" } });
  const w2 = { id: "w2", entry: entry("w2"), message: plain };
  expect(await runs.append(now, "wfr_g", [w2], handOff)).toBe("ok");
  expect((await new MessageStore(singlePartition(pool), MIN).get("w2"))?.state).toBe("ACTIVE");
  expect(await runs.append(now, "wfr_g", [{ id: "cb", entry: entry("cb") }])).toBe("ok");
  expect(await runs.keep("wfr_g", "e1", "ZGF0YQ==")).toBe("kept");
  expect(await runs.wait(now, "wfr_g", "e1", '{"token":"t1"}', msg("t1"), undefined)).toEqual({
    kept: "ZGF0YQ==",
  });
  expect(await runs.wait(now, "wfr_g", "e2", '{"token":"t2"}', msg("t2"), msg("n2"))).toBe(
    "registered",
  );
  expect(await runs.keep("wfr_g", "e2", "")).toEqual({ waiter: '{"token":"t2"}' });
  const result = { id: "n1", entry: entry("n1"), message: msg("n1") };
  expect(await runs.release(now, "wfr_g", "e2", "t2", result)).toBe("released");
  expect(await runs.wait(now, "wfr_g", "e3", '{"token":"t3"}', msg("t3"), undefined)).toBe(
    "registered",
  );
  expect(await runs.release(now, "wfr_g", "e3", "t3", { id: "t3", entry: entry("t3") })).toBe(
    "released",
  );
  expect(await runs.end(now, "wfr_g", "RUN_SUCCESS", { response: "done" })).toBeDefined();
  expect(await runs.release(now, "wfr_g", "e3", "t3", { id: "t3", entry: entry("t3") })).toBe(
    "ended",
  );
}

/**
 * A MessageStore (one partition) on a Redis of its own for the calling `describe`: started before
 * its tests, flushed before each, stopped after. Read `store`/`pool` inside the tests.
 */
export function storeOnOwnRedis(): { store: MessageStore; pool: RedisPool } {
  const ctx = {} as { store: MessageStore; pool: RedisPool };
  let redis: TestRedis | undefined;
  beforeAll(async () => {
    redis = await startRedis();
    ctx.pool = testPool(redis.url, 1);
    ctx.store = new MessageStore(singlePartition(ctx.pool), 60_000);
  });
  afterAll(async () => {
    await ctx.pool?.close();
    await redis?.stop();
  });
  beforeEach(async () => {
    await ctx.pool.exec(["FLUSHALL"]);
  });
  return ctx;
}
