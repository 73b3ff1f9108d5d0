/**
 * Cron lateness benchmark:
 * `npx tsx bench/schedules.ts [--schedules N] [--ticks T] [--lead MS] [--smoke]`.
 *
 * Two queue services (two "processes", in one Node process) on one redis-server share N
 * schedules `* * * * *` (created half through each), delivering to a local receiver (a bare
 * node:http server in a child process of its own). For T real
 * minute ticks it records, per delivery, lateness = arrival time - the minute tick, and checks
 * that every schedule was delivered exactly once per tick. Runs about T + 1 minutes.
 * `--smoke` (CI runs it so the script keeps working; its figures mean nothing): 20 schedules, one
 * tick, on a scheduler clock moved forward so that the tick comes a second after the creates.
 * `--lead MS` sets STASHD_QUEUE_SCHEDULE_LEAD_MS (default 500; 0 fires at the tick).
 * Anchor, same run: N bare undici POSTs to the same receiver started at once over 100 connections
 * (a destination's share of stashd's slots), when they finished: the floor of "tick -> delivered"
 * for N messages to one destination on this machine. Also this process's resident memory (it
 * holds both queue services) after the ticks and at its peak.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Pool } from "undici";
import { loadConfig } from "../src/config/load.js";
import { startQueueService, type QueueService } from "../src/queue/service.js";
import { createLogger } from "../src/shared/log.js";
import { startRedis } from "../test/harness/redis.js";
import { startReceiverChild, stats } from "./lib/queue-parts.js";

/**
 * The anchor: `n` POSTs to the receiver started at once through one undici Pool of `connections`;
 * when each finished, ms after the start, sorted. The least "tick -> delivered" can be when a tick
 * hands the same receiver `n` messages at once.
 */
async function bareBurst(url: string, n: number, connections: number): Promise<number[]> {
  const pool = new Pool(url, { connections });
  const start = Date.now();
  const done = await Promise.all(
    Array.from({ length: n }, async () => {
      const res = await pool.request({ path: "/bare", method: "POST", body: "x" });
      await res.body.dump();
      return Date.now() - start;
    }),
  );
  await pool.close();
  return done.sort((a, b) => a - b);
}

const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(name);
  return i === -1 ? dflt : Number(process.argv[i + 1]) || dflt;
};
const smoke = process.argv.includes("--smoke");
const N = smoke ? 20 : arg("--schedules", 500);
const TICKS = smoke ? 1 : arg("--ticks", 2);
const LEAD = process.argv.includes("--lead")
  ? Number(process.argv[process.argv.indexOf("--lead") + 1])
  : 500;
const TOKEN = "YmVuY2g=";
const MIN = 60_000;
/** The schedulers' clock: real time, moved forward by `offset` in smoke mode. */
const clock = { offset: 0, now: () => Date.now() + clock.offset };

// The receiver runs in a child process of its own (as a real destination would), so its work does
// not compete with the queue services' event loop; arrivals are fetched from it.
const { url: rxBase, child: receiver } = await startReceiverChild();
const rxUrl = `${rxBase}/tick`;
const arrivals: { id: string; at: number }[] = [];
/** Fetches the receiver's new schedule arrivals, on the schedulers' clock. */
async function collect(): Promise<void> {
  for (const t of (await stats(rxBase)).ticks)
    arrivals.push({ id: t.id, at: Math.round(t.at) + clock.offset });
}

const redis = await startRedis();
const dirs: string[] = [];
async function service(): Promise<QueueService> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-bench-"));
  dirs.push(dataDir);
  const config = loadConfig(
    {
      dataDir,
      queuePort: 0,
      queueRedisUrl: redis.url,
      queueAllowUnsafeRedis: true, // the harness's Redis runs without persistence
      queueToken: TOKEN,
      queueCurrentSigningKey: "sig_bench_current",
      queueNextSigningKey: "sig_bench_next",
      queueScheduleLeadMs: LEAD,
    },
    {},
  );
  return startQueueService(config, createLogger("warn"), { clock });
}
const services = [await service(), await service()];

for (let i = 0; i < N; i++) {
  const via = services[i % 2];
  const res = await fetch(`${via?.url}/v2/schedules/${rxUrl}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "upstash-cron": "* * * * *" },
    body: String(i),
  });
  if (res.status !== 200) throw new Error(`create failed: ${res.status} ${await res.text()}`);
}
const first = Math.floor(clock.now() / MIN) * MIN + MIN;
if (smoke) clock.offset = Math.max(0, first - 1000 - Date.now());
console.log(`${N} schedules on 2 services; waiting for ${TICKS} tick(s) from ${new Date(first)}`);
// Until every tick's deliveries arrived (and a second more, for duplicates) or 15 s past the last.
const end = first + (TICKS - 1) * MIN + 15_000;
// Ticks before `first` (creating N schedules may span a minute) are not counted.
const counted = () => arrivals.filter((a) => a.at >= first);
while (counted().length < N * TICKS && clock.now() < end) {
  await new Promise((r) => setTimeout(r, 50));
  await collect();
}
await new Promise((r) => setTimeout(r, Math.min(1000, Math.max(0, end - clock.now()))));
await collect();

const sinceTick = (t: number): number => t - Math.floor(t / MIN) * MIN;
const ticked = counted();
const lateness = ticked.map((a) => sinceTick(a.at)).sort((a, b) => a - b);
const pct = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
// Fire lateness: when each produced message was stored (its CREATED log event) after its tick;
// negative when stored ahead of it (the lead), measured from the nearest tick.
const nearTick = (t: number): number => t - Math.round(t / MIN) * MIN;
const logs = await fetch(`${services[0]?.url}/v2/logs?state=CREATED&count=1000`, {
  headers: { authorization: `Bearer ${TOKEN}` },
});
const created = ((await logs.json()) as { logs: { time: number }[] }).logs;
const fired = created.map((l) => nearTick(l.time + clock.offset)).sort((a, b) => a - b);
const perTick = new Map<string, number>();
for (const a of ticked) {
  const key = `${a.id}@${Math.floor(a.at / MIN)}`;
  perTick.set(key, (perTick.get(key) ?? 0) + 1);
}
const duplicates = [...perTick.values()].filter((n) => n > 1).length;
const rss = process.memoryUsage();
const peakRss = process.resourceUsage().maxRSS; // KB
const mb = (bytes: number): string => (bytes / 2 ** 20).toFixed(0);
for (const s of services) await s.close();
const bare = await bareBurst(rxBase, N, 100);
console.log(
  `deliveries ${ticked.length} (expected ${N * TICKS}), duplicates ${duplicates}\n` +
    `tick -> message stored (newest ${fired.length}): p50 ${pct(fired, 50)} ms, ` +
    `p99 ${pct(fired, 99)} ms\n` +
    `tick -> delivered: first ${lateness[0]} ms, p50 ${pct(lateness, 50)} ms, p99 ${pct(lateness, 99)} ms, ` +
    `max ${lateness.at(-1)} ms\n` +
    `anchor, ${N} bare undici POSTs to the same receiver started at once over 100 connections ` +
    `(a destination's share of stashd's slots): done after p50 ${pct(bare, 50)} ms, ` +
    `p99 ${pct(bare, 99)} ms\n` +
    `resident memory of this process (both queue services): ${mb(rss.rss)} MB after the ticks, ` +
    `peak ${mb(peakRss * 1024)} MB`,
);

receiver.kill();
await redis.stop();
for (const d of dirs) rmSync(d, { recursive: true, force: true });
