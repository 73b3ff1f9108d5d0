/**
 * Reliability scenario 1 (docs/reliability.md):
 * `npx tsx bench/reliability-processes.ts [--messages N] [--kills K] [--schedules S]
 *  [--minutes M] [--seed X]`.
 *
 * Three `bin/stashd` processes (build first: `npm run build`) share one queue Redis on loopback.
 * The bench publishes N messages through random processes (70 % plain publishes, a fifth of them
 * under a flow-control key of parallelism 2 and a tenth under one of rate 5 per second; 30 %
 * enqueued in order to three FIFO queues of parallelism 1) to a receiver that fails at random
 * (500s, timeouts, resets), while one process at a time is SIGKILLed and restarted K times. Then
 * it waits (at most 90 s) for every accepted message and reports accepted, delivered, lost (must
 * be 0), duplicates, FIFO violations (must be 0), parallelism exceeded, of FIFO queues or of the
 * flow-control key (must be 0), and rate exceeded (must be 0, see reliability-rate.ts). Fixed
 * seed.
 *
 * Meanwhile S schedules (`* * * * *`) run through M minute boundaries; at each boundary one
 * process is SIGKILLed around the tick. Reported: ticks fired twice and missed (must be 0), and
 * every tick's message is counted among the accepted ones (must be delivered). The run lasts
 * until 40 s after the M-th boundary (a tick claimed by a killed process fires after the 30 s
 * fire lease), so about M + 1 minutes.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { freePort, startRedis, stopChild } from "../test/harness/redis.js";
import { pick, seeded } from "../test/harness/random.js";
import { checkRate } from "./reliability-rate.js";
import {
  RETRY_DELAY,
  boundariesBetween,
  countTicks,
  createSchedules,
  deleteSchedules,
} from "./reliability-ticks.js";

const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(name);
  return i === -1 ? dflt : Number(process.argv[i + 1]) || dflt;
};
const MESSAGES = arg("--messages", 2000);
const KILLS = arg("--kills", 3);
const SCHEDULES = arg("--schedules", 10);
const MINUTES = arg("--minutes", 2);
const SEED = arg("--seed", 20261122);
const rand = seeded(SEED);
const TOKEN = Buffer.from(JSON.stringify({ UserID: "bench", Password: "reliability" })).toString(
  "base64",
);
const FIFO_QUEUES = ["fifo-0", "fifo-1", "fifo-2"];

/** Receiver state: successes per id, first-success order and in-flight count per FIFO queue. */
const successes = new Map<string, number>();
const firstOrder = new Map<string, number[]>();
/** A request in flight at the receiver (times in ms since the processes started). */
interface InFlight {
  id: string;
  retried: string;
  /** The sender's port (which connection, so which process). */
  port: number;
  arrived: number;
  closed?: number;
  answer?: string;
}
/** Requests in flight per FIFO queue or flow-control key. */
const inFlight = new Map<string, InFlight[]>();
/** What was in flight when a limit was exceeded (one id twice: a message delivered twice at once). */
const exceedSamples: { group: string; inFlight: InFlight[] }[] = [];
/** When each SIGKILL happened (ms since the processes started). */
const killTimes: number[] = [];
let parallelismExceeded = 0;
const exceededBy = new Map<string, number>();

/** Flow-control key of the `/fc` messages and its parallelism limit. */
const FC_KEY = "rel-key";
const FC_PARALLELISM = 2;
/** Flow-control key of the `/rate` messages: at most RATE admitted per second. */
const RATE_KEY = "rel-rate";
const RATE = 5;

/** Counts a request in flight under `group` until it closes; flags going over `limit`. */
function track(
  group: string,
  limit: number,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): InFlight {
  const list = inFlight.get(group) ?? [];
  const entry: InFlight = {
    id: String(req.headers["upstash-message-id"]),
    retried: String(req.headers["upstash-retried"]),
    port: req.socket.remotePort ?? 0,
    arrived: Date.now() - started,
  };
  list.push(entry);
  inFlight.set(group, list);
  if (list.length > limit) {
    parallelismExceeded++;
    exceededBy.set(group, (exceededBy.get(group) ?? 0) + 1);
    exceedSamples.push({ group, inFlight: [...list] });
  }
  res.on("close", () => {
    entry.closed = Date.now() - started;
    list.splice(list.indexOf(entry), 1);
  });
  return entry;
}

const receiver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  if (req.url?.includes("/sched/")) return void receiveTick(req, res);
  const queue = String(req.headers["upstash-queue-name"] ?? "");
  const tracked: InFlight[] = [];
  if (queue !== "") tracked.push(track(queue, 1, req, res));
  if (req.url?.endsWith("/fc")) tracked.push(track(FC_KEY, FC_PARALLELISM, req, res));
  const answer = (a: string) => tracked.forEach((t) => (t.answer = a));
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const id = Buffer.concat(chunks).toString();
    const r = rand();
    if (r < 0.15) return void res.writeHead(500).end("fail", () => answer("500"));
    if (r < 0.2) return void (answer("reset"), req.socket.destroy());
    if (r < 0.25) return void (answer("late"), setTimeout(() => res.end("late"), 1500));
    answer("ok");
    const seen = successes.get(id) ?? 0;
    successes.set(id, seen + 1);
    const [, q, i] = /^(fifo-\d)-(\d+)$/.exec(id) ?? [];
    if (seen === 0 && q && i) firstOrder.set(q, [...(firstOrder.get(q) ?? []), Number(i)]);
    res.end("ok");
  });
});

/** A schedule's tick: fails like the others; a success counts under `sched:<message id>`. */
function receiveTick(req: http.IncomingMessage, res: http.ServerResponse): void {
  req.resume();
  req.on("end", () => {
    const r = rand();
    if (r < 0.15) return void res.writeHead(500).end("fail");
    if (r < 0.2) return void req.socket.destroy();
    const id = `sched:${String(req.headers["upstash-message-id"])}`;
    successes.set(id, (successes.get(id) ?? 0) + 1);
    res.end("ok");
  });
}
await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
const rxUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/rx`;

const redis = await startRedis();
interface Proc {
  dir: string;
  port: number;
  child?: ChildProcess;
  restarting?: boolean;
}
const procs: Proc[] = [];
for (let i = 0; i < 3; i++) {
  procs.push({ dir: mkdtempSync(path.join(os.tmpdir(), "stashd-rel-")), port: await freePort() });
}

function startProc(p: Proc): void {
  p.child = spawn(
    process.execPath,
    [
      "bin/stashd",
      "start",
      "--data-dir",
      p.dir,
      "--kv-port",
      "0",
      "--queue-port",
      String(p.port),
      "--admin-port",
      "0",
    ],
    {
      stdio: ["ignore", "ignore", "pipe"],
      env: {
        STASHD_QUEUE_REDIS_URL: redis.url,
        STASHD_QUEUE_ALLOW_UNSAFE_REDIS: "true", // the harness's Redis runs without persistence
        STASHD_KV_REDIS_URL: `${redis.url}/1`,
        QSTASH_TOKEN: TOKEN,
        QSTASH_CURRENT_SIGNING_KEY: "sig_reliability_current",
        QSTASH_NEXT_SIGNING_KEY: "sig_reliability_next",
        STASHD_QUEUE_LEASE_MS: "1000",
        STASHD_QUEUE_REAP_MS: "100",
        STASHD_QUEUE_IDLE_POLL_MS: "50",
        STASHD_QUEUE_BACKOFF_SCALE_MS: "1",
        STASHD_LOG_LEVEL: "warn",
      },
    },
  );
  p.child.stderr?.setEncoding("utf8").on("data", (text: string) => countWarnings(text));
}

/** Warnings of the processes by message ("delivery abandoned": an attempt's lease ran out). */
const warnings = new Map<string, number>();
function countWarnings(text: string): void {
  for (const [, msg] of text.matchAll(/ (?:warn|error) +\[[^\]]*\] ([^{\n]*)/g)) {
    const key = (msg ?? "").trim();
    warnings.set(key, (warnings.get(key) ?? 0) + 1);
  }
}

/** The flow-control headers of `/fc` (parallelism) and `/rate` (rate) messages. */
const FLOW_HEADERS = {
  fc: {
    "upstash-flow-control-key": FC_KEY,
    "upstash-flow-control-value": `parallelism=${FC_PARALLELISM}`,
  },
  rate: {
    "upstash-flow-control-key": RATE_KEY,
    "upstash-flow-control-value": `rate=${RATE}, period=1s`,
  },
} as const;

/** Sends one message through random live processes until one answers 201/202. */
async function send(
  id: string,
  queue: string | undefined,
  flow?: keyof typeof FLOW_HEADERS,
): Promise<void> {
  const fc = flow ? FLOW_HEADERS[flow] : undefined;
  for (;;) {
    const p = pick(rand, procs);
    const route = queue ? `enqueue/${queue}` : "publish";
    try {
      const res = await fetch(
        `http://127.0.0.1:${p.port}/v2/${route}/${rxUrl}${flow ? `/${flow}` : ""}`,
        {
          method: "POST",
          body: id,
          headers: {
            authorization: `Bearer ${TOKEN}`,
            "upstash-retries": "12",
            "upstash-timeout": "1s",
            "upstash-retry-delay": RETRY_DELAY,
            // A retry after an unknown outcome must not store the message twice.
            "upstash-deduplication-id": id,
            ...fc,
          },
          signal: AbortSignal.timeout(5_000),
        },
      );
      await res.text();
      if (res.status === 201 || res.status === 202) return;
    } catch {
      // the process is down or was killed mid-request: try another one
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function waitHealthy(p: Proc): Promise<void> {
  for (let i = 0; i < 400; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${p.port}/v2/keys`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`process on port ${p.port} did not start`);
}

for (const p of procs) startProc(p);
await Promise.all(procs.map(waitHealthy));
const started = Date.now();

/** The queue API of a random live process (retried on another while one is being killed). */
async function api(route: string, init: RequestInit = {}): Promise<Response> {
  for (let i = 0; ; i++) {
    try {
      const headers = {
        ...(init.headers as Record<string, string>),
        authorization: `Bearer ${TOKEN}`,
      };
      return await fetch(`http://127.0.0.1:${pick(rand, procs).port}${route}`, {
        ...init,
        headers,
      });
    } catch (err) {
      if (i > 50) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

const scheduleIds = await createSchedules(api, `${rxUrl}/sched`, SCHEDULES);
const schedulesFrom = Date.now();
const boundaries = boundariesBetween(schedulesFrom, schedulesFrom + MINUTES * 60_000);

/** SIGKILLs a random process not already restarting, and restarts it. */
async function killAndRestart(): Promise<void> {
  const p = pick(
    rand,
    procs.filter((x) => !x.restarting),
  );
  p.restarting = true;
  p.child?.kill("SIGKILL");
  killTimes.push(Date.now() - started);
  killsDone++;
  await new Promise((r) => setTimeout(r, 300));
  startProc(p);
  await waitHealthy(p);
  p.restarting = false;
}

const accepted: string[] = [];
let killsDone = 0;
const killer = (async () => {
  for (let k = 0; k < KILLS; k++) {
    await new Promise((r) => setTimeout(r, 1500 + rand() * 1500));
    await killAndRestart();
  }
})();
/** One kill per minute boundary, landing within 100 ms around the tick. */
const boundaryKiller = (async () => {
  for (const b of boundaries) {
    await new Promise((r) => setTimeout(r, b - 50 + rand() * 100 - Date.now()));
    await killAndRestart();
  }
})();

const fifoSenders = FIFO_QUEUES.map(async (q) => {
  for (let i = 0; i < Math.round((MESSAGES * 0.3) / FIFO_QUEUES.length); i++) {
    await send(`${q}-${i}`, q);
    accepted.push(`${q}-${i}`);
  }
});
const plainSenders = Array.from({ length: 8 }, async (_, w) => {
  for (let i = w; i < Math.round(MESSAGES * 0.7); i += 8) {
    // A fifth of the plain messages go under a flow-control key of parallelism 2, a tenth
    // under one of rate 5 per second.
    const flow = i % 5 === 0 ? "fc" : i % 10 === 1 ? "rate" : undefined;
    const id = `${flow ?? "plain"}-${i}`;
    await send(id, undefined, flow);
    accepted.push(id);
  }
});
await Promise.all([...fifoSenders, ...plainSenders, killer]);
const lastBoundary = boundaries[boundaries.length - 1] ?? Date.now();
await boundaryKiller;
await new Promise((r) => setTimeout(r, Math.max(0, lastBoundary + 40_000 - Date.now())));
await deleteSchedules(api, scheduleIds);
const ticks = await countTicks(api, scheduleIds, boundaries);
const rate = await checkRate(api, RATE_KEY, { rate: RATE, periodMs: 1000, spanPeriods: 10 });
for (const id of ticks.messageIds) accepted.push(`sched:${id}`);

const deadline = Date.now() + 90_000;
const missing = (): string[] => accepted.filter((id) => !successes.has(id));
while (missing().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));

let fifoViolations = 0;
for (const order of firstOrder.values()) {
  for (let i = 1; i < order.length; i++)
    if ((order[i] ?? 0) < (order[i - 1] ?? 0)) fifoViolations++;
}
const delivered = accepted.length - missing().length;
const duplicates = [...successes.values()].reduce((sum, n) => sum + n - 1, 0);
console.log(
  JSON.stringify(
    {
      seed: SEED,
      processes: 3,
      kills: killsDone,
      accepted: accepted.length,
      delivered,
      lost: missing().length,
      duplicates,
      fifoViolations,
      parallelismExceeded,
      exceededBy: Object.fromEntries(exceededBy),
      exceedSamples,
      killTimes,
      rateKeyMessages: rate.messages,
      rateMaxIn1s: rate.maxInPeriod,
      rateMaxIn10s: rate.maxInSpan,
      rateBoundIn10s: rate.spanBound,
      rateExceeded: rate.exceeded,
      schedules: ticks.schedules,
      minuteBoundaries: boundaries.length,
      expectedTicks: ticks.expectedTicks,
      ticksFired: ticks.messageIds.length,
      ticksFiredTwice: ticks.firedTwice,
      ticksMissed: ticks.missed,
      seconds: Math.round((Date.now() - started) / 1000),
      missingSample: missing().slice(0, 10),
      warnings: Object.fromEntries(warnings),
    },
    null,
    2,
  ),
);

for (const p of procs) if (p.child) await stopChild(p.child);
await redis.stop();
for (const p of procs) rmSync(p.dir, { recursive: true, force: true });
await new Promise<void>((r) => receiver.close(() => r()));
const clean =
  missing().length === 0 &&
  fifoViolations === 0 &&
  parallelismExceeded === 0 &&
  rate.exceeded === 0 &&
  ticks.firedTwice === 0 &&
  ticks.missed === 0;
process.exit(clean ? 0 : 1);
