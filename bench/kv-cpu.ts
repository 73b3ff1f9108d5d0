/**
 * stashd's CPU time per KV request, before and after a change:
 * `npx tsx bench/kv-cpu.ts [--stashd OLD/bin/stashd] [--rounds N] [--seconds N] [--connections N]
 * [--only TEXT]` (`--only`: just the scenarios whose name contains TEXT, e.g. `pipeline`).
 *
 * Throughput on a shared 2-core machine moves with whatever else runs there; the CPU a request
 * costs stashd moves much less. So this starts one redis-server and one stashd child per build
 * (this checkout's `bin/stashd`, and with `--stashd` another build's launcher) side by side, loads
 * each in turn with the same scenario (wrk, or autocannon), alternating builds within every round,
 * and reads each child's user and system CPU from /proc around every run. Prints, per scenario
 * and build, the median and minimum over the rounds of CPU µs per request (user, and user +
 * system: the system part is mostly the socket writes, which a change to stashd's code rarely
 * moves). The first round warms the JIT and is left out of the figures.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, startRedis, stopChild } from "../test/harness/redis.js";
import { runLoad } from "./http-load.js";
import { cpuSplitMs } from "./lib/proc.js";
import { startStashdChild } from "./stashd-child.js";

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const other = flag("--stashd");
const builds = other ? [other, "bin/stashd"] : ["bin/stashd"];
const rounds = (Number(flag("--rounds")) || 5) + 1;
const seconds = Number(flag("--seconds")) || 2;
const connections = Number(flag("--connections")) || 50;

const gets = (n: number): string =>
  JSON.stringify(Array.from({ length: n }, () => ["GET", "bench:k"]));
const only = flag("--only");
const SCENARIOS: { name: string; path: string; body?: string }[] = [
  { name: "GET (JSON body)", path: "/", body: '["GET","bench:k"]' },
  { name: "GET (path)", path: "/get/bench:k" },
  { name: "SET (JSON body)", path: "/", body: '["SET","bench:k","v"]' },
  { name: "/pipeline 100 GET", path: "/pipeline", body: gets(100) },
].filter((s) => only === undefined || s.name.includes(only));

interface Sample {
  user: number;
  total: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

async function main(): Promise<void> {
  const redis = await startRedis();
  const dir = mkdtempSync(path.join(os.tmpdir(), "stashd-kv-cpu-"));
  const children: {
    url: string;
    token: string;
    pid: number | undefined;
    stop: () => Promise<void>;
  }[] = [];
  try {
    for (const [i, bin] of builds.entries()) {
      const port = await freePort();
      const child = await startStashdChild(redis.url, path.join(dir, `d${i}`), port, {}, { bin });
      children.push({
        url: `http://127.0.0.1:${port}`,
        token: child.token,
        pid: child.child.pid,
        stop: () => stopChild(child.child),
      });
    }
    // The GETs read a value whatever scenarios run (both children share the one Redis).
    const first = children[0];
    if (first) {
      await fetch(`${first.url}/`, {
        method: "POST",
        headers: { authorization: `Bearer ${first.token}` },
        body: '["SET","bench:k","v"]',
      });
    }
    const samples = new Map<string, Sample[][]>();
    for (let round = 0; round < rounds; round++) {
      for (const s of SCENARIOS) {
        for (const [i, c] of children.entries()) {
          const headers = {
            authorization: `Bearer ${c.token}`,
            "content-type": "application/json",
          };
          const before = cpuSplitMs(c.pid);
          const load = await runLoad(
            {
              url: c.url + s.path,
              connections,
              seconds,
              headers,
              ...(s.body === undefined ? { method: "GET" } : { method: "POST", body: s.body }),
            },
            dir,
          );
          const after = cpuSplitMs(c.pid);
          const requests = load.rps * seconds;
          const user = ((after.user - before.user) * 1000) / requests;
          const total =
            ((after.user + after.system - before.user - before.system) * 1000) / requests;
          if (round > 0) {
            const perBuild = samples.get(s.name) ?? builds.map(() => []);
            perBuild[i]?.push({ user, total });
            samples.set(s.name, perBuild);
          }
          process.stderr.write(
            `  ${s.name} ${builds[i]}: ${Math.round(load.rps)} req/s, ${total.toFixed(1)} µs CPU/request (load ${os.loadavg()[0]?.toFixed(1)})\n`,
          );
        }
      }
    }
    report(samples);
  } finally {
    for (const c of children) await c.stop();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function report(samples: Map<string, Sample[][]>): void {
  const f = (xs: number[]): string =>
    `${median(xs).toFixed(1)} (min ${Math.min(...xs).toFixed(1)})`;
  const lines = [
    `# bench/kv-cpu: ${new Date().toISOString()}, ${connections} connections, ${seconds}s x ${rounds - 1} rounds`,
    "",
    "| scenario | build | user µs/request | user+system µs/request |",
    "|---|---|---|---|",
  ];
  for (const [name, perBuild] of samples) {
    for (const [i, xs] of perBuild.entries()) {
      lines.push(
        `| ${name} | ${builds[i]} | ${f(xs.map((x) => x.user))} | ${f(xs.map((x) => x.total))} |`,
      );
    }
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}

await main();
