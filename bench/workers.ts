/**
 * The goals of issue 29, as users run stashd: `npm run bench:workers [-- --seconds N --smoke
 * --kv-only]`.
 *
 * Each configuration is a `bin/stashd start` child: first the defaults (nothing set but the
 * ports and, for KV, the Redis shared with webdis), then the other worker counts (the scaling
 * curve: 1, 2 and, where the machine has them, 4 workers), then a tuned one (STASHD_LOG_LEVEL=warn).
 * For each, every goal row is printed beside its anchor measured right before it, in the same run:
 * - KV `POST /` GET and SET at 50 connections vs webdis (2 threads) on the same Redis, when
 *   installed (`npm run setup -- --with-bench`); `/pipeline` of 100 GETs vs `redis-benchmark -P
 *   100` GET on that Redis;
 * - queue: durable publishes (each delivered at once) at 50 connections vs redis-benchmark SET
 *   with `appendfsync always` (lib/redis-anchor.ts); a backlog's deliveries vs a bare undici POST
 *   loop at 50 connections to the same receiver; publish->delivery p50/p99 unloaded.
 * Each configuration first runs every load for `--warm` seconds, unrecorded (the JIT's warm-up).
 * The load generator is wrk when installed, else autocannon (bench/http-load.ts).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, startRedis, stopChild } from "../test/harness/redis.js";
import { hasWrk, runLoad } from "./http-load.js";
import { cpuMs, stashdPids } from "./lib/proc.js";
import { bareLoop, latency, publishBacklog } from "./lib/queue-measures.js";
import {
  drain,
  publishLoad,
  queueRedisPid,
  startQueueChild,
  startReceiverChild,
  stats,
} from "./lib/queue-parts.js";
import { fsyncAlwaysSet, redisBenchmark } from "./lib/redis-anchor.js";
import { waitForHttp } from "./stashd-child.js";
import { option, smoke } from "./lib/args.js";

const seconds = smoke ? 1 : Number(option("--seconds")) || 5;
/** `--kv-only`: the KV rows alone (no queue load), for a quick look at the KV goals. */
const kvOnly = process.argv.includes("--kv-only");
/**
 * `--warm SECONDS` (default 10): each load's unrecorded run before a configuration's rows. V8
 * compiles the queue's hot paths over about 10 s of publish load (docs/benchmarks-log.md, "the
 * publish and hand-off path's CPU, steady state and warm-up"); with 2 s the queue rows measured
 * mostly that compilation, not the server a user runs for hours.
 */
const warmSeconds = Number(option("--warm") ?? 10);
const BIN = path.resolve(option("--stashd") ?? "bin/stashd");
const CONNS = smoke ? 4 : 50;
const cores = os.availableParallelism();

interface Config {
  name: string;
  env: Record<string, string>;
}

/** Defaults first, then the other worker counts of the curve, then tuned. */
function configs(): Config[] {
  const counts = [1, 2, 4].filter((n) => n <= Math.max(2, cores) && n !== cores);
  return [
    { name: `defaults (${cores > 1 ? `${cores} workers` : "1 process"})`, env: {} },
    ...counts.map((n) => ({
      name: `${n} worker${n > 1 ? "s" : ""}`,
      env: { STASHD_WORKERS: String(n) },
    })),
    { name: "tuned: defaults + STASHD_LOG_LEVEL=warn", env: { STASHD_LOG_LEVEL: "warn" } },
  ];
}

interface Running {
  child: ChildProcess;
  /** The data dir (its queue Redis's pid file). */
  dataDir: string;
  kvUrl: string;
  kvToken: string;
  queueUrl: string;
  queueToken: string;
}

/**
 * `bin/stashd start` with `env` (and nothing else but the ports, and KV's `default` database on
 * `redisUrl`: the log level is the default, info) on a fresh data dir.
 */
async function startStashd(dataDir: string, redisUrl: string, env: Record<string, string>) {
  const defaults = { STASHD_LOG_LEVEL: "info", STASHD_WORKERS: "0" }; // startQueueChild pins 1
  const settings = { ...defaults, STASHD_KV_REDIS_URL: redisUrl, ...env };
  const s = await startQueueChild(BIN, dataDir, settings);
  if (!s.kv) throw new Error("stashd runs without the KV gateway");
  return {
    child: s.child,
    dataDir,
    kvUrl: s.kv.url,
    kvToken: s.kv.token,
    queueUrl: s.url,
    queueToken: s.token,
  };
}

function startWebdis(redisPort: number, port: number, dir: string): ChildProcess | undefined {
  if (spawnSync("sh", ["-c", "command -v webdis"]).status !== 0) return undefined;
  const conf = path.join(dir, "webdis.json");
  const settings = { redis_host: "127.0.0.1", redis_port: redisPort, http_host: "127.0.0.1" };
  const rest = { http_port: port, threads: 2, pool_size: 20, daemonize: false, verbosity: 0 };
  writeFileSync(conf, JSON.stringify({ ...settings, ...rest, logfile: path.join(dir, "w.log") }));
  return spawn("webdis", [conf], { stdio: "ignore" });
}

/** `work`'s result and the CPU (µs, user + system) all stashd processes used meanwhile. */
async function withCpu<T>(
  s: Running,
  work: () => Promise<T>,
): Promise<{ result: T; cpuUs: number }> {
  const pids = stashdPids(s.child);
  const total = (): number => pids.reduce((sum, pid) => sum + cpuMs(pid), 0);
  const before = total();
  const result = await work();
  return { result, cpuUs: (total() - before) * 1000 };
}

type Row = [goal: string, stashd: string, anchor: string, ratio: string, target: string];
const f = (x: number): string => (Number.isFinite(x) ? x.toFixed(x < 10 ? 2 : 0) : "n/a");
const ratio = (a: number, b: number | undefined): string =>
  b && Number.isFinite(b) ? (a / b).toFixed(2) : "n/a";

/** Requests/s at CONNS connections for `seconds`: a POST of `body`, or a GET without one. */
async function load(url: string, headers: Record<string, string>, body?: string, secs = seconds) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "stashd-bench-w-"));
  try {
    const how = body === undefined ? { method: "GET" } : { method: "POST", body };
    const spec = { url, connections: CONNS, seconds: secs, headers, ...how };
    return await runLoad(smoke ? { ...spec, requests: 50 } : spec, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `warmSeconds` of each load, unrecorded, before a configuration is measured: its workers' JIT
 * compiles the hot paths during the first seconds (measured cold, the first row came out at a
 * fraction of the others).
 */
async function warmUp(s: Running, rx: string): Promise<void> {
  if (smoke) return;
  const auth = kvAuth(s);
  const gets = JSON.stringify(Array.from({ length: 100 }, () => ["GET", "bench:k"]));
  for (const [url, body] of [
    [`${s.kvUrl}/`, '["GET","bench:k"]'],
    [`${s.kvUrl}/`, '["SET","bench:k","v"]'],
    [`${s.kvUrl}/pipeline`, gets],
  ] as const) {
    await load(url, auth, body, warmSeconds);
  }
  if (kvOnly) return;
  const pub = await publishLoad(s.queueUrl, s.queueToken, rx, CONNS, warmSeconds);
  await drain(rx, pub.total, 30_000);
}

function kvAuth(s: Running): Record<string, string> {
  return { authorization: `Bearer ${s.kvToken}`, "content-type": "application/json" };
}

async function kvRows(s: Running, webdis: string | undefined, redisPort: number): Promise<Row[]> {
  const auth = kvAuth(s);
  const rows: Row[] = [];
  for (const cmd of ["GET", "SET"]) {
    const body = JSON.stringify(cmd === "GET" ? ["GET", "bench:k"] : ["SET", "bench:k", "v"]);
    const anchor = webdis
      ? (await load(`${webdis}/${cmd === "GET" ? "GET/bench:k" : "SET/bench:k/v"}`, {})).rps
      : NaN;
    const { result, cpuUs } = await withCpu(s, () => load(`${s.kvUrl}/`, auth, body));
    const own = result.rps;
    const anchorName = webdis ? `webdis ${cmd} (2 threads): ${f(anchor)}` : "webdis not installed";
    rows.push([
      `KV POST / ${cmd} req/s, c=${CONNS}`,
      `${f(own)} (stashd CPU ${f(cpuUs / result.requests)} µs/req)`,
      anchorName,
      ratio(own, anchor),
      ">= 1.0",
    ]);
  }
  const gets = JSON.stringify(Array.from({ length: 100 }, () => ["GET", "bench:k"]));
  const args = ["-p", String(redisPort), "-c", String(CONNS), "-P", "100", "-t", "get"];
  const n = smoke ? 10_000 : CONNS * 100 * 2000;
  const direct = (await redisBenchmark([...args, "-n", String(n), "--csv"], "GET"))?.rps ?? NaN;
  const pipeline = (await load(`${s.kvUrl}/pipeline`, auth, gets)).rps * 100;
  rows.push([
    `KV /pipeline 100 GET commands/s, c=${CONNS}`,
    f(pipeline),
    `redis-benchmark -P 100 GET: ${f(direct)}`,
    ratio(pipeline, direct),
    ">= 0.8",
  ]);
  return rows;
}

/**
 * CPU time (µs) of every stashd process and of its queue Redis while `work` runs, per `items`
 * (what `work` returns as its count).
 */
async function queueCpu<T>(s: Running, work: () => Promise<T>, items: (r: T) => number) {
  const redis = (): number => cpuMs(queueRedisPid(s.dataDir));
  const redis0 = redis();
  const { result, cpuUs } = await withCpu(s, work);
  const n = items(result);
  return { result, stashdUs: cpuUs / n, redisUs: ((redis() - redis0) * 1000) / n };
}

const cpuText = (c: { stashdUs: number; redisUs: number }): string =>
  `stashd CPU ${f(c.stashdUs)} µs/msg, its Redis ${f(c.redisUs)}`;

/**
 * The queue's goal rows. Publishes "delivered at once" count from the first publish until the
 * last of them arrived at the receiver (not until wrk stopped: deliveries trailing the publishes
 * would flatter the rate). Each row also gives the CPU per message of stashd and of its queue
 * Redis, which a loaded machine moves far less than the rates.
 */
async function queueRows(s: Running, rx: string): Promise<Row[]> {
  const requests = smoke ? 2000 : seconds * 25_000;
  const set = (await fsyncAlwaysSet([{ clients: CONNS, requests }]))?.[0];
  await stats(rx);
  const started = Date.now();
  const atOnce = await queueCpu(
    s,
    async () => {
      const pub = await publishLoad(s.queueUrl, s.queueToken, rx, CONNS, seconds);
      return { pub, got: await drain(rx, pub.total, 30_000) };
    },
    (r) => r.pub.total,
  );
  const { pub, got: delivered } = atOnce.result;
  const pubRate = delivered / ((Date.now() - started) / 1000);
  const bare = await bareLoop(rx, CONNS, seconds);
  const n = smoke ? 100 : Math.min(20_000, Math.max(2000, Math.round(pub.rps * 2)));
  await publishBacklog(s.queueUrl, s.queueToken, rx, n, pub.rps);
  await stats(rx);
  const t = Date.now();
  const backlog = await queueCpu(
    s,
    () => drain(rx, n, 60_000),
    (got) => got,
  );
  const dps = backlog.result / ((Date.now() - t) / 1000);
  const lat = await latency(s.queueUrl, s.queueToken, rx, smoke ? 20 : 300);
  return [
    [
      `queue durable publishes/s delivered at once, c=${CONNS}`,
      `${f(pubRate)} (${cpuText(atOnce)})`,
      `redis-benchmark SET appendfsync always, ${CONNS} clients: ${f(set?.rps ?? NaN)}`,
      ratio(pubRate, set?.rps),
      ">= 10k/s",
    ],
    [
      `queue backlog deliveries/s (${backlog.result} of ${n})`,
      `${f(dps)} (${cpuText(backlog)})`,
      `bare undici POST loop, ${CONNS} connections: ${f(bare.rps)}`,
      ratio(dps, bare.rps),
      ">= 0.5",
    ],
    [
      `queue publish->delivery, unloaded (${lat.n} samples)`,
      `p50 ${f(lat.p50)} ms, p99 ${f(lat.p99)} ms`,
      "",
      "",
      "p50 <= 2 ms, p99 <= 10 ms",
    ],
  ];
}

async function main(): Promise<void> {
  const redis = await startRedis();
  const scratch = mkdtempSync(path.join(os.tmpdir(), "stashd-bench-workers-"));
  const webdisPort = await freePort();
  const webdis = startWebdis(redis.port, webdisPort, scratch);
  const webdisUrl = webdis ? `http://127.0.0.1:${webdisPort}` : undefined;
  if (webdisUrl) await waitForHttp(`${webdisUrl}/PING`);
  const { url: rx, child: receiver } = await startReceiverChild();
  const loadAvg = os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(" ");
  const cpu = `${cores}x ${os.cpus()[0]?.model ?? "cpu"}`;
  const out = [
    `# bench/workers: ${new Date().toISOString()} on ${cpu}, node ${process.version}`,
    `# ${seconds}s per run, load generator ${hasWrk() ? "wrk" : "autocannon"}, load average at start ${loadAvg}`,
  ];
  try {
    for (const config of configs()) {
      const dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-bench-w-data-"));
      const s = await startStashd(dataDir, redis.url, config.env);
      try {
        await fetch(`${s.kvUrl}/`, {
          method: "POST",
          headers: kvAuth(s),
          body: '["SET","bench:k","v"]',
        });
        await warmUp(s, rx);
        const rows = [
          ...(await kvRows(s, webdisUrl, redis.port)),
          ...(kvOnly ? [] : await queueRows(s, rx)),
        ];
        out.push(
          "",
          `## ${config.name}`,
          "",
          "| goal | stashd | anchor (same run) | ratio | target |",
        );
        out.push("|---|---|---|---|---|", ...rows.map((r) => `| ${r.join(" | ")} |`));
        process.stderr.write(`${out.slice(-rows.length - 4).join("\n")}\n`);
      } finally {
        await stopChild(s.child);
        rmSync(dataDir, { recursive: true, force: true });
      }
    }
    out.push(
      "",
      `load average at the end: ${os
        .loadavg()
        .map((x) => x.toFixed(1))
        .join(" ")}`,
    );
    process.stdout.write(`${out.join("\n")}\n`);
  } finally {
    receiver.kill();
    if (webdis) await stopChild(webdis);
    await redis.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
