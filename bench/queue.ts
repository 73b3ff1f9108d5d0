/**
 * Queue benchmark: `npm run bench:queue [-- --seconds N] [--soak S [--heap-snapshots DIR]]
 * [--smoke] [--profile DIR]`.
 *
 * Every stashd row is printed next to its anchor, measured in the same run on the same machine:
 * - durable publishes/s at 1 and 50 connections (wrk when installed, else autocannon, against
 *   /v2/publish/<receiver>; stashd's managed queue Redis has `appendfsync always`, so a counted
 *   publish is on disk), next to `redis-benchmark` SET at 1 and 50 clients against an identically
 *   configured redis-server (lib/redis-anchor.ts), the most any durable write can do here; at 50
 *   connections twice: each publish delivered at once (stashd stores and delivers on the same
 *   cores), and delivered a day later (storing only), with stashd's and its Redis's CPU per
 *   publish;
 * - deliveries/s: a backlog released at once by a common Upstash-Not-Before, next to the bare
 *   ceiling, an undici POST loop at 50 connections straight to the same receiver, with the CPU
 *   per delivery of stashd, its Redis and the receiver beside the bare loop's (on a 2-core
 *   machine their sum bounds what any build can reach); and again with a flow-control key whose
 *   limit never binds (the flow-control overhead);
 * - publish->delivery latency p50/p99 (no delay, one publish at a time), next to the bare POST's;
 * - CPU per message of stashd and of its Redis over the 50-connection publish phase (each
 *   publish is also delivered then), beside the receiver's CPU per request (what one bare
 *   node:http exchange costs on this machine now);
 * - stashd's resident memory after the run and at its peak; with `--soak S`, also after each
 *   `--seconds` round of 50-connection publishing during S seconds (growth would show there);
 *   with `--heap-snapshots DIR` also the live heap after the first and the last round, and the
 *   kinds of objects that grew most between them (a leak would show there).
 * `--smoke` runs every phase for a moment (CI runs it so the script keeps working; its figures
 * mean nothing). `--profile DIR` runs stashd with `--cpu-prof` and leaves the profile in DIR.
 * `--stashd PATH` runs another build's launcher (bin/stashd of a copy of `bin/` and `dist/` made
 * before a change), to compare before and after with the same bench.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { stopChild } from "../test/harness/redis.js";
import { cpuMs, rssMb } from "./lib/proc.js";
import {
  drain,
  publishLoad as publishFor,
  startQueueChild,
  nodeMemoryMb,
  queueRedisPid,
  startReceiverChild,
  stats,
  type Rate,
} from "./lib/queue-parts.js";
import { fsyncAlwaysSet, type AnchorRow } from "./lib/redis-anchor.js";
import { bareLoop, latency, publishBacklog } from "./lib/queue-measures.js";
import { describeGrowth, growthBetween, snapshotFlags, takeSnapshot } from "./lib/heap.js";
import { option, smoke } from "./lib/args.js";

const seconds = smoke ? 1 : Number(option("--seconds")) || 4;
const BIN = path.resolve(option("--stashd") ?? "bin/stashd");
/** `--heap-snapshots DIR`: the soak's heap snapshots are written there (bench/lib/heap.ts). */
const heapDir = option("--heap-snapshots");

/** CPU per request of this (the load generator's) process while `work` runs, µs. */
async function ownCpu<T>(count: (r: T) => number, work: () => Promise<T>) {
  const before = process.cpuUsage();
  const result = await work();
  const used = process.cpuUsage(before);
  return { result, cpuUs: (used.user + used.system) / count(result) };
}

const publishLoad = (
  base: string,
  token: string,
  target: string,
  connections: number,
  headers: Record<string, string> = {},
) => publishFor(base, token, target, connections, seconds, headers);

/** CPU time (ms so far) of each process of a run: stashd, its Redis, the receiver. */
interface Pids {
  stashd: number | undefined;
  redis: number | undefined;
  receiver: number | undefined;
}
const cpuOf = (pids: Pids) => ({
  stashd: cpuMs(pids.stashd),
  redis: cpuMs(pids.redis),
  receiver: cpuMs(pids.receiver),
});
/** CPU per item (µs) of each process since `before`. */
const cpuPer = (pids: Pids, before: ReturnType<typeof cpuOf>, items: number) => {
  const now = cpuOf(pids);
  const per = (k: keyof Pids) => ((now[k] - before[k]) * 1000) / items;
  return { stashd: per("stashd"), redis: per("redis"), receiver: per("receiver") };
};

function startStashd(dataDir: string) {
  const profileDir = option("--profile");
  const nodeArgs = profileDir ? ["--cpu-prof", "--cpu-prof-dir", profileDir] : [];
  if (heapDir) nodeArgs.push(...snapshotFlags(heapDir));
  return startQueueChild(BIN, dataDir, {}, nodeArgs);
}

/**
 * Deliveries/s of a backlog of `n`, and the CPU per delivery (µs) of stashd, its Redis and the
 * receiver while it drains.
 */
async function deliveries(
  stashd: { url: string; token: string; pids: Pids },
  rx: string,
  n: number,
  rate: number,
  extra: Record<string, string> = {},
) {
  await publishBacklog(stashd.url, stashd.token, rx, n, rate, extra);
  await stats(rx);
  const t = Date.now();
  const cpu0 = cpuOf(stashd.pids);
  const got = await drain(rx, n, 60_000);
  const cpu = cpuPer(stashd.pids, cpu0, got);
  if (got < n) throw new Error(`only ${got} of ${n} backlog messages were delivered`);
  return { rps: got / ((Date.now() - t) / 1000), cpu };
}

/**
 * `--soak S`: publishes at 50 connections (each delivered) in rounds of `seconds` for S seconds;
 * stashd's resident memory, and its V8 heap in use and external memory (its admin `/metrics`),
 * after each round, in MB. With `--heap-snapshots DIR`, a heap snapshot after the first round and
 * another after the last, and what grew between them.
 */
async function soak(
  stashd: { url: string; token: string; admin?: string },
  rx: string,
  pid?: number,
) {
  const { url: base, token, admin } = stashd;
  const total = Number(option("--soak")) || 0;
  const rss: number[] = [];
  const heap: string[] = [];
  const snapshots: string[] = [];
  // At least two rounds: growth needs a before and an after.
  for (const end = Date.now() + total * 1000; total > 0 && (Date.now() < end || rss.length < 2);) {
    const round = await publishLoad(base, token, rx, 50);
    await drain(rx, round.total, 30_000);
    rss.push(rssMb(pid).now);
    if (admin) {
      const m = await nodeMemoryMb(admin);
      heap.push(`${f(m.heapUsed)}/${f(m.external)}`);
    }
    if (heapDir && pid && rss.length === 1) snapshots.push(await takeSnapshot(pid, heapDir));
  }
  if (heapDir && pid && rss.length > 1) snapshots.push(await takeSnapshot(pid, heapDir));
  const [first, last] = snapshots;
  const growth = first && last ? describeGrowth(growthBetween(first, last)) : undefined;
  return { total, rss, heap, growth };
}

const f = (x: number): string => (Number.isFinite(x) ? x.toFixed(x < 10 ? 2 : 0) : "n/a");
const rate = (r: Rate, unit: string) =>
  `${f(r.rps)} ${unit}, p50 ${f(r.p50)} ms, p99 ${f(r.p99)} ms`;
const ratio = (a: number, b: number | undefined) => (b ? (a / b).toFixed(2) : "n/a");

async function main(): Promise<void> {
  // The anchor first, before stashd and the receiver exist, so the three rows share nothing.
  const anchor = await fsyncAlwaysSet([
    { clients: 1, requests: smoke ? 50 : seconds * 500 },
    { clients: 50, requests: smoke ? 2000 : seconds * 25_000 },
  ]);
  const set = (c: number): AnchorRow | undefined => anchor?.find((a) => a.clients === c);
  const { url: rx, child: receiver } = await startReceiverChild();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-bench-queue-"));
  const stashd = await startStashd(dataDir);
  const pids: Pids = {
    stashd: stashd.child.pid,
    redis: queueRedisPid(dataDir),
    receiver: receiver.pid,
  };
  try {
    const bare1 = await bareLoop(rx, 1, seconds);
    const rx0 = cpuMs(pids.receiver);
    const bare50 = await ownCpu(
      (r) => r.rps * seconds,
      () => bareLoop(rx, 50, seconds),
    );
    const bareRxUs = ((cpuMs(pids.receiver) - rx0) * 1000) / (bare50.result.rps * seconds);
    await stats(rx);
    const pub1 = await publishLoad(stashd.url, stashd.token, rx, 1);
    await drain(rx, pub1.total, 10_000);
    const cpu0 = cpuOf(pids);
    const started50 = Date.now();
    const pub50 = await publishLoad(stashd.url, stashd.token, rx, 50);
    await drain(rx, pub50.total, 30_000);
    // Counted until the last of them was delivered (deliveries trailing wrk would flatter it).
    const atOnce = { ...pub50, rps: pub50.total / ((Date.now() - started50) / 1000) };
    const cpu = cpuPer(pids, cpu0, pub50.total);
    const n = smoke ? 100 : Math.min(20_000, Math.max(2000, Math.round(pub50.rps * 2)));
    const target = { ...stashd, pids };
    const dps = await deliveries(target, rx, n, pub50.rps);
    const dpsKey = await deliveries(target, rx, n, pub50.rps, {
      "upstash-flow-control-key": "bench",
      "upstash-flow-control-value": "parallelism=100000",
    });
    const lat = await latency(stashd.url, stashd.token, rx, smoke ? 20 : 500);
    // Publishes alone: delivered a day later (never, in this run), so the phase measures storing.
    const cpuLater0 = cpuOf(pids);
    const later = await publishLoad(stashd.url, stashd.token, rx, 50, { "upstash-delay": "1d" });
    const cpuLater = cpuPer(pids, cpuLater0, later.total);
    const rss = rssMb(pids.stashd);
    const anchorText = (c: number) => {
      const a = set(c);
      return a ? rate(a, "SET/s") : "n/a (no redis-benchmark)";
    };
    const rows = [
      ["measure", "stashd", "anchor (same run)", "ratio"],
      ["---", "---", "---", "---"],
      [
        "durable publishes, 1 connection",
        rate(pub1, "/s"),
        `redis-benchmark SET, appendfsync always, 1 client: ${anchorText(1)}`,
        ratio(pub1.rps, set(1)?.rps),
      ],
      [
        "durable publishes, 50 connections, each delivered at once (until the last arrived)",
        rate(atOnce, "/s"),
        `redis-benchmark SET, appendfsync always, 50 clients: ${anchorText(50)}`,
        ratio(atOnce.rps, set(50)?.rps),
      ],
      [
        "durable publishes, 50 connections, delivered a day later (storing only)",
        `${rate(later, "/s")}; CPU per publish: stashd ${f(cpuLater.stashd)} µs, its Redis ${f(cpuLater.redis)} µs`,
        `redis-benchmark SET, appendfsync always, 50 clients: ${anchorText(50)}`,
        ratio(later.rps, set(50)?.rps),
      ],
      [
        `deliveries (backlog of ${n})`,
        `${f(dps.rps)} /s`,
        `bare undici POST, 50 connections: ${f(bare50.result.rps)} req/s`,
        ratio(dps.rps, bare50.result.rps),
      ],
      [
        "CPU per delivery (backlog drain)",
        `stashd ${f(dps.cpu.stashd)} µs, its Redis ${f(dps.cpu.redis)} µs, the receiver ${f(dps.cpu.receiver)} µs`,
        `bare undici POST, 50 connections: ${f(bare50.cpuUs)} µs per request (load generator), the receiver ${f(bareRxUs)} µs`,
        ratio(dps.cpu.stashd, bare50.cpuUs),
      ],
      [
        "deliveries with a flow-control key (limit never reached)",
        `${f(dpsKey.rps)} /s`,
        `deliveries without: ${f(dps.rps)} /s`,
        ratio(dpsKey.rps, dps.rps),
      ],
      [
        `publish -> delivery latency (${lat.n} samples)`,
        `p50 ${f(lat.p50)} ms, p99 ${f(lat.p99)} ms`,
        `bare undici POST, 1 connection: ${rate(bare1, "req/s")}`,
        "",
      ],
      [
        "CPU per message, 50-connection publish phase (published and delivered)",
        `stashd ${f(cpu.stashd)} µs, its Redis ${f(cpu.redis)} µs`,
        `the receiver (a bare node:http server): ${f(cpu.receiver)} µs per request`,
        ratio(cpu.stashd, cpu.receiver),
      ],
      ["stashd resident memory", `${f(rss.now)} MB after the run, peak ${f(rss.peak)} MB`, "", ""],
    ];
    const soaked = await soak(stashd, rx, pids.stashd);
    if (soaked.rss.length > 0) {
      const mb = soaked.rss.map(f).join(", ");
      rows.push([
        `stashd resident memory over a ${soaked.total} s publish soak`,
        `${mb} MB`,
        "",
        "",
      ]);
      if (soaked.heap.length > 0) {
        const what = `stashd V8 heap used / external memory over the soak`;
        rows.push([what, `${soaked.heap.join(", ")} MB`, "", ""]);
      }
    }
    for (const r of rows) console.log(`| ${r.join(" | ")} |`);
    if (soaked.growth) console.log(`\nstashd heap, first soak round -> last:\n${soaked.growth}`);
  } finally {
    await stopChild(stashd.child);
    receiver.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
