import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { startStashd, type TestStashd } from "../harness/stashd.js";
import { startReceiver, type TestReceiver } from "./receiver.js";
import { FAST_QUEUE } from "./setup.js";

/**
 * Reliability scenario 2 (docs/reliability.md): the managed queue redis-server (appendfsync
 * always) is SIGKILLed during a publish load. While it is down publishes get a JSON 503, never a
 * hang or a 500; every publish that got a 2xx is delivered once it is back (stashd restarts it).
 * Half the load is enqueued to FIFO queues, whose delivery order must survive the outage.
 */
const WORKERS = 8;
const MIN_BEFORE_KILL = 300;
const MIN_AFTER_RECOVERY = 200;

let s: TestStashd;
let rx: TestReceiver;

beforeAll(async () => {
  // logLevel error: the outage logs one warning per refused publish.
  s = await startStashd({ ...FAST_QUEUE, managedRestartMaxBackoffMs: 200, logLevel: "error" });
  rx = await startReceiver(() => ({
    current: s.queue.currentSigningKey,
    next: s.queue.nextSigningKey,
  }));
});
afterAll(async () => {
  await rx?.close();
  await s?.stop();
});

interface Tally {
  acked: Set<string>;
  unavailable: number;
  other: string[];
  sent: number;
}

function queueRedisPid(): number {
  return Number(readFileSync(path.join(s.dataDir, "queue-redis", "redis.pid"), "utf8"));
}

/**
 * Even workers publish; odd ones enqueue to their own FIFO queue `q-<n>` (parallelism 1), so
 * each queue's delivery order can be checked against the order its worker sent in.
 */
async function publishOne(n: number, id: string, t: Tally): Promise<number> {
  t.sent++;
  const route = n % 2 === 0 ? "publish" : `enqueue/q-${n}`;
  const res = await fetch(`${s.queue.url}/v2/${route}/${rx.url}/outage`, {
    method: "POST",
    headers: { authorization: `Bearer ${s.queue.token}`, "upstash-retries": "3" },
    body: id,
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  if (res.status === 201) t.acked.add(id);
  else if (res.status === 503 && /^\{"error":"[^"]+/.test(text)) t.unavailable++;
  else t.other.push(`${res.status} ${text.slice(0, 120)}`);
  return res.status;
}

/** Publishes until `done()` says stop; each worker numbers its own messages. */
async function worker(n: number, t: Tally, done: () => boolean): Promise<void> {
  for (let i = 0; !done(); i++) await publishOne(n, `m-${n}-${i}`, t);
}

/** First deliveries of each FIFO queue out of its worker's sending order. */
function fifoViolations(bodies: readonly string[]): number {
  const seen = new Set<string>();
  const last = new Map<string, number>();
  let violations = 0;
  for (const body of bodies) {
    if (seen.has(body)) continue;
    seen.add(body);
    const [, worker = "", i = ""] = body.split("-");
    if (Number(worker) % 2 === 0) continue;
    if (Number(i) < (last.get(worker) ?? -1)) violations++;
    last.set(worker, Number(i));
  }
  return violations;
}

describe("queue Redis killed during a publish load", () => {
  it("answers 503 while it is down and delivers every acknowledged publish", async () => {
    const t: Tally = { acked: new Set(), unavailable: 0, other: [], sent: 0 };
    let phase: "before" | "down" | "after" = "before";
    let afterRecovery = 0;
    const done = (): boolean => phase === "after" && afterRecovery >= MIN_AFTER_RECOVERY;
    const load = Promise.all(Array.from({ length: WORKERS }, (_, n) => worker(n, t, done)));
    await eventually(() => expect(t.acked.size).toBeGreaterThan(MIN_BEFORE_KILL), {
      timeoutMs: 20_000,
    });
    const pid = queueRedisPid();
    process.kill(pid, "SIGKILL");
    phase = "down";
    await eventually(() => expect(t.unavailable).toBeGreaterThan(0), { timeoutMs: 10_000 });
    const ackedAtRecovery = await eventually(
      () => {
        expect(queueRedisPid()).not.toBe(pid);
        return t.acked.size;
      },
      { timeoutMs: 15_000 },
    );
    phase = "after";
    await eventually(
      () => {
        afterRecovery = t.acked.size - ackedAtRecovery;
        expect(afterRecovery).toBeGreaterThanOrEqual(MIN_AFTER_RECOVERY);
      },
      { timeoutMs: 15_000 },
    );
    await load;
    expect(t.other).toEqual([]);
    const delivered = (): Set<string> => new Set(rx.requests.map((r) => r.body));
    await eventually(() => expect([...t.acked].filter((id) => !delivered().has(id))).toEqual([]), {
      timeoutMs: 20_000,
      intervalMs: 100,
    });
    const lost = [...t.acked].filter((id) => !delivered().has(id)).length;
    const bodies = rx.requests.map((r) => r.body);
    const duplicates = bodies.length - new Set(bodies).size;
    const fifo = fifoViolations(bodies);
    console.log(
      `[reliability] scenario 2: sent ${t.sent}, acknowledged ${t.acked.size}, ` +
        `503 while down ${t.unavailable}, other ${t.other.length}, lost ${lost}, ` +
        `duplicates ${duplicates}, FIFO violations ${fifo}`,
    );
    expect(lost).toBe(0);
    expect(fifo).toBe(0);
  });
});
