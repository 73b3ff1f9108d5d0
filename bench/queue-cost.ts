/**
 * Where a queue message's cost goes: `npx tsx bench/queue-cost.ts [--seconds N] [--workers N]
 * [--backlog N] [--only PHASE] [--warm-up S] [--profile DIR] [--stashd PATH] [--smoke]`.
 *
 * CPU time per message is what this bench reports, not throughput: on a shared machine the rate
 * moves with the other load, the work per message does not. It runs `bin/stashd start`
 * (`--workers`, default 1) with a local receiver and, for each phase, reads before and after:
 * - the CPU time (/proc) of every stashd process, of its queue Redis and of the receiver;
 * - the queue Redis's `INFO stats` (commands, socket reads = request batches received: each is
 *   one round trip some stashd connection made, whatever it held), `INFO commandstats` (calls and
 *   µs of each command; commands that scripts run are counted under their own names too, and
 *   inside their EVALSHA's µs) and the AOF's size (bytes written and fsync'd);
 * - stashd's `stashd_queue_attempts_started_total` (handed off at publish, or claimed).
 * Phases: publishes at 50 connections (wrk) each delivered at once; the same stored for later
 * (`Upstash-Delay: 1d`: the publish alone); a backlog of `--backlog` released at once (the
 * delivery alone). Each row is per message (per publish, per delivery). `--only at-once|store|
 * backlog` runs one phase; `--profile DIR` runs stashd under `--cpu-prof` (with `--only`, a
 * profile of that phase and the warm-up). `--warm-up S` (default 2) is how long publishes run
 * unrecorded first: V8 is still compiling the hot paths for about 10 s of this load (each worker
 * its own), so a short warm-up reads the start-up cost, a long one (10-15 s) the steady state.
 */
import { spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { stopChild } from "../test/harness/redis.js";
import { cpuMs, cpuSplitMs, stashdPids } from "./lib/proc.js";
import { publishBacklog } from "./lib/queue-measures.js";
import * as queue from "./lib/queue-parts.js";
import { option, smoke } from "./lib/args.js";

const seconds = smoke ? 1 : Number(option("--seconds")) || 4;
const warmUpSeconds = Number(option("--warm-up")) || 2;
const workers = option("--workers") ?? "1";
const backlog = smoke ? 200 : Number(option("--backlog")) || 10_000;
const BIN = path.resolve(option("--stashd") ?? "bin/stashd");
const CONNS = smoke ? 4 : 50;
const only = option("--only");
const profileDir = option("--profile");
const runs = (name: string): boolean => only === undefined || only === name;

/** The queue Redis of a stashd data dir, asked through redis-cli. */
class QueueRedis {
  private readonly args: string[];
  constructor(private readonly dir: string) {
    const conf = readFileSync(path.join(dir, "queue-redis", "redis.conf"), "utf8");
    const value = (name: string) => new RegExp(`^${name} (.*)$`, "m").exec(conf)?.[1] ?? "";
    this.args = ["-s", value("unixsocket"), "-a", value("requirepass"), "--no-auth-warning"];
  }

  pid(): number {
    return queue.queueRedisPid(this.dir) ?? 0;
  }

  /** `INFO section` as name -> value. */
  info(section: string): Map<string, string> {
    const out = spawnSync("redis-cli", [...this.args, "INFO", section], { encoding: "utf8" });
    const fields = new Map<string, string>();
    for (const line of out.stdout.split(/\r?\n/)) {
      const at = line.indexOf(":");
      if (at > 0) fields.set(line.slice(0, at), line.slice(at + 1));
    }
    return fields;
  }
}

interface Sample {
  stashdMs: number;
  /** The kernel's share of stashdMs (system time: socket calls, mostly). */
  stashdSystemMs: number;
  redisMs: number;
  receiverMs: number;
  commands: number;
  reads: number;
  aofBytes: number;
  /** Per command: calls and µs. */
  cmds: Map<string, { calls: number; usec: number }>;
  attempts: { handed_off: number; claimed: number };
}

/**
 * What a process was doing, sampled every millisecond from /proc (its main thread's state): the
 * share of samples running or runnable (R), waiting on the disk (D: Redis's fdatasync), asleep
 * (S: waiting for work). A share near 100 % R+D is a process that is the bottleneck.
 */
class StateSampler {
  private readonly counts = new Map<number, Record<string, number>>();
  private readonly timer: NodeJS.Timeout;
  constructor(pids: number[]) {
    for (const pid of pids) this.counts.set(pid, {});
    this.timer = setInterval(() => {
      for (const [pid, c] of this.counts) {
        try {
          const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
          const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
          c[state] = (c[state] ?? 0) + 1;
        } catch {
          // gone
        }
      }
    }, 1);
  }

  /** Per pid: "R x% D y% S z%". */
  stop(): Map<number, string> {
    clearInterval(this.timer);
    const out = new Map<number, string>();
    for (const [pid, c] of this.counts) {
      const total = Object.values(c).reduce((a, b) => a + b, 0) || 1;
      const share = (k: string) => `${k} ${Math.round((100 * (c[k] ?? 0)) / total)}%`;
      out.set(pid, ["R", "D", "S"].map(share).join(" "));
    }
    return out;
  }
}

interface Parts {
  pids: () => number[];
  redis: QueueRedis;
  receiver: ChildProcess;
  admin: string | undefined;
}

async function attemptsStarted(admin: string | undefined) {
  const text = admin ? await (await fetch(`${admin}/metrics`)).text() : "";
  const read = (how: string) =>
    Number(
      new RegExp(`^stashd_queue_attempts_started_total\\{how="${how}"\\} (\\S+)$`, "m").exec(
        text,
      )?.[1] ?? 0,
    );
  return { handed_off: read("handed_off"), claimed: read("claimed") };
}

async function sample(p: Parts): Promise<Sample> {
  const stat = p.redis.info("stats");
  const cmds = new Map<string, { calls: number; usec: number }>();
  for (const [k, v] of p.redis.info("commandstats")) {
    const calls = Number(/calls=(\d+)/.exec(v)?.[1] ?? 0);
    const usec = Number(/usec=(\d+)/.exec(v)?.[1] ?? 0);
    cmds.set(k.replace(/^cmdstat_/, ""), { calls, usec });
  }
  return {
    stashdMs: p.pids().reduce((sum, pid) => sum + cpuMs(pid), 0),
    stashdSystemMs: p.pids().reduce((sum, pid) => sum + cpuSplitMs(pid).system, 0),
    redisMs: cpuMs(p.redis.pid()),
    receiverMs: cpuMs(p.receiver.pid),
    commands: Number(stat.get("total_commands_processed")),
    reads: Number(stat.get("total_reads_processed")),
    aofBytes: aofBytes(p.redis.info("persistence")),
    cmds,
    attempts: await attemptsStarted(p.admin),
  };
}

/**
 * The AOF's size, or NaN once it was rewritten (a rewrite starts it over from the data's current
 * state, so a difference across one says nothing about what the phase wrote).
 */
let rewritesSeen: number | undefined;
function aofBytes(persistence: Map<string, string>): number {
  const rewrites = Number(persistence.get("aof_rewrites") ?? 0);
  const changed = rewritesSeen !== undefined && rewrites !== rewritesSeen;
  rewritesSeen = rewrites;
  return changed ? NaN : Number(persistence.get("aof_current_size") ?? 0);
}

const f = (x: number, digits = 1): string => (Number.isFinite(x) ? x.toFixed(digits) : "n/a");

/** The per-message rows between two samples. */
function report(name: string, a: Sample, b: Sample, n: number, wallMs: number): string[] {
  const per = (x: number) => x / n;
  const lines = [
    `### ${name}: ${n} messages in ${f(wallMs / 1000, 2)} s (${f(n / (wallMs / 1000), 0)}/s)`,
    "",
    "| per message | value |",
    "|---|---|",
    `| CPU µs: stashd / its Redis / the receiver | ${f(per((b.stashdMs - a.stashdMs) * 1000))} / ${f(per((b.redisMs - a.redisMs) * 1000))} / ${f(per((b.receiverMs - a.receiverMs) * 1000))} |`,
    `| stashd CPU µs in the kernel (system time) | ${f(per((b.stashdSystemMs - a.stashdSystemMs) * 1000))} |`,
    `| Redis commands (scripts' own commands included) | ${f(per(b.commands - a.commands), 2)} |`,
    `| Redis socket reads (request batches received) | ${f(per(b.reads - a.reads), 3)} |`,
    `| AOF bytes written | ${f(per(b.aofBytes - a.aofBytes), 0)} |`,
    `| attempts started: handed off / claimed | ${f(per(b.attempts.handed_off - a.attempts.handed_off), 2)} / ${f(per(b.attempts.claimed - a.attempts.claimed), 2)} |`,
    "",
    "| command | calls per message | µs per call | µs per message |",
    "|---|---|---|---|",
  ];
  const rows = [...b.cmds]
    .map(([cmd, s]) => {
      const before = a.cmds.get(cmd) ?? { calls: 0, usec: 0 };
      const calls = s.calls - before.calls;
      const usec = s.usec - before.usec;
      return { cmd, calls, usec };
    })
    .filter((r) => r.calls > 0 && !["info", "auth", "client"].includes(r.cmd))
    .sort((x, y) => y.usec - x.usec);
  for (const r of rows) {
    const line = `| ${r.cmd} | ${f(per(r.calls), 3)} | ${f(r.usec / r.calls, 2)} | ${f(per(r.usec), 2)} |`;
    lines.push(line);
  }
  return [...lines, ""];
}

async function phase(p: Parts, name: string, run: () => Promise<number>): Promise<string[]> {
  const stashd = p.pids();
  const states = new StateSampler([p.redis.pid(), ...stashd]);
  const a = await sample(p);
  const t = Date.now();
  const n = await run();
  const wallMs = Date.now() - t;
  const b = await sample(p);
  const seen = states.stop();
  const lines = report(name, a, b, n, wallMs);
  const what = (_pid: number, i: number) =>
    i === 0 ? "its Redis" : i === 1 ? "stashd (supervisor or only process)" : `worker ${i - 1}`;
  lines.push("| process: state samples while the phase ran | R running / D disk wait / S asleep |");
  lines.push("|---|---|");
  [p.redis.pid(), ...stashd].forEach((pid, i) =>
    lines.push(`| ${what(pid, i)} | ${seen.get(pid) ?? ""} |`),
  );
  return [...lines, ""];
}

async function main(): Promise<void> {
  const { url: rx, child: receiver } = await queue.startReceiverChild();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "stashd-bench-cost-"));
  const nodeArgs = profileDir ? ["--cpu-prof", "--cpu-prof-dir", path.resolve(profileDir)] : [];
  const s = await queue.startQueueChild(BIN, dataDir, { STASHD_WORKERS: workers }, nodeArgs);
  const redis = new QueueRedis(dataDir);
  const parts: Parts = { pids: () => stashdPids(s.child), redis, receiver, admin: s.admin };
  const load = (secs: number, headers: Record<string, string> = {}) =>
    queue.publishLoad(s.url, s.token, rx, CONNS, secs, headers);
  const out = [
    `# bench/queue-cost: ${new Date().toISOString()}, ${os.availableParallelism()}x ${os.cpus()[0]?.model ?? "cpu"}, node ${process.version}, ${workers} worker(s)`,
    `# load average at start ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")}`,
    "",
  ];
  try {
    // Warm-up: the JIT compiles the hot paths (unrecorded).
    if (!smoke) {
      const warm = await load(warmUpSeconds);
      await queue.drain(rx, warm.total, 30_000);
    }
    await queue.stats(rx);
    if (runs("at-once")) {
      out.push(
        ...(await phase(parts, "publish, each delivered at once (50 connections)", async () => {
          const r = await load(seconds);
          const got = await queue.drain(rx, r.total, 30_000);
          if (got < r.total) throw new Error(`only ${got} of ${r.total} delivered`);
          return r.total;
        })),
      );
    }
    let storeRate = 1000;
    if (runs("store") || runs("backlog")) {
      out.push(
        ...(await phase(parts, "publish only (Upstash-Delay: 1d)", async () => {
          const r = await load(seconds, { "upstash-delay": "1d" });
          storeRate = r.rps;
          return r.total;
        })),
      );
    }
    if (runs("backlog")) {
      // 20 connections publish the backlog: plan for a third of the 50-connection rate.
      await publishBacklog(s.url, s.token, rx, backlog, storeRate / 3);
      await queue.stats(rx);
      out.push(
        ...(await phase(parts, `backlog of ${backlog} released at once (deliveries only)`, () =>
          queue.drain(rx, backlog, 60_000),
        )),
      );
    }
    out.push(
      `# load average at the end ${os
        .loadavg()
        .map((x) => x.toFixed(1))
        .join(" ")}`,
    );
    process.stdout.write(`${out.join("\n")}\n`);
  } finally {
    await stopChild(s.child);
    receiver.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
